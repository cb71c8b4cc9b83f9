// An operator's action (cancel, rerun; approve, reject for approvers): shown to tokens that may take
// it only, always with a reason, which is recorded with the change under the token's identity. Nothing happens until it is confirmed.
import { useState } from 'preact/hooks';
import { ErrorBox } from './common.js';

export function Action({ label, explain, perform }: { label: string; explain: string; perform: (reason: string) => Promise<string> }) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ done?: string; error?: Error }>({});
  if (!open)
    return (
      <span class="action">
        <button type="button" onClick={() => setOpen(true)}>
          {label}…
        </button>
        {outcome.done ? (
          <span class="done" role="status">
            {outcome.done}
          </span>
        ) : null}
      </span>
    );
  return (
    <form
      class="action-form"
      aria-label={label}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        try {
          const done = await perform(reason.trim());
          setOutcome({ done });
          setOpen(false);
          setReason('');
        } catch (error) {
          setOutcome({ error: error as Error });
        } finally {
          setBusy(false);
        }
      }}
    >
      <p>{explain}</p>
      <label>
        Reason (recorded){' '}
        <input name="reason" required maxLength={2000} value={reason} onInput={(e) => setReason(e.currentTarget.value)} autoFocus />
      </label>{' '}
      <button type="submit" disabled={busy || !reason.trim()}>
        {label}
      </button>{' '}
      <button type="button" onClick={() => setOpen(false)}>
        Keep it
      </button>
      {outcome.error ? <ErrorBox error={outcome.error} what={`${label} was refused`} /> : null}
    </form>
  );
}
