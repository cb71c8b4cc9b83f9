-- Rows written by the health-check workflow: proof that a Temporal activity reached Postgres.
CREATE TABLE baton.health_checks (
  id bigserial PRIMARY KEY,
  workflow_id text NOT NULL UNIQUE,
  message text NOT NULL CHECK (length(message) BETWEEN 1 AND 1000),
  recorded_at timestamptz NOT NULL DEFAULT now()
);
