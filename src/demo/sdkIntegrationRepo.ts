import { commitAll, createScriptedRepo } from '../testkit/scriptedRepo.js';

/**
 * The demo's project: an SDK whose integration is split into request construction, response
 * parsing and migration tests (which need both). Agents are shell scripts that edit files and
 * commit, so the demo runs offline with no model.
 */
export async function createSdkIntegrationRepo(): Promise<string> {
  return createScriptedRepo({
    'README.md': '# example SDK\n',
    'sdk.js': "module.exports = { version: '1.0.0' };\n",
  });
}

/**
 * Request construction. Its first attempt works for up to 5 minutes, so it is certainly still
 * running when the demo freezes its worker, however busy the machine; the next owner's attempt
 * takes about 3 s.
 */
export const REQUEST_AGENT = [
  'if [ "$BATON_CLAIM_VERSION" = 1 ]; then steps=600; else steps=6; fi',
  'for i in $(seq 1 $steps); do echo "request construction: step $i/$steps"; sleep 0.5; done',
  `cat > request.js <<'JS'
exports.buildRequest = (op, body) => ({ method: 'POST', path: '/v2/' + op, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
JS`,
  commitAll('request construction for the v2 API'),
].join('\n');

export const REQUEST_CHECK = `node -e "const r = require('./request.js').buildRequest('pay', { amount: 5 }); if (r.path !== '/v2/pay' || JSON.parse(r.body).amount !== 5) process.exit(1); console.log('request ok')"`;

/** Response parsing: its first attempt has a bug that verification catches; the rerun fixes it. */
export const RESPONSE_AGENT = [
  'echo "response parsing: attempt with claim version $BATON_CLAIM_VERSION"',
  'if [ "$BATON_CLAIM_VERSION" = 1 ]; then field=amount_cents; else field=amount; fi',
  `cat > response.js <<JS
exports.parseResponse = (text) => { const data = JSON.parse(text); return { id: data.id, amount: data.$field }; };
JS`,
  commitAll('response parsing for the v2 API'),
].join('\n');

export const RESPONSE_CHECK = `node -e "const p = require('./response.js').parseResponse('{\\"id\\":\\"p1\\",\\"amount\\":5}'); if (p.amount !== 5) { console.error('amount is', p.amount); process.exit(1) } console.log('response ok')"`;

/** The code host tool the tests agent opens its pull request with, and that call's step. */
export const CODE_HOST_TOOL = 'codehost';
export const OPEN_PR_STEP = 'open-pr';

/**
 * Migration tests: need both upstream changes, which the runner merges in at their pinned
 * revisions. Then the agent opens a pull request through baton's tool gateway: an external
 * effect that must happen once however many owners the task has.
 */
export const TESTS_AGENT = [
  'set -e',
  'echo "migration tests against request $(git log -1 --format=%h -- request.js) and response $(git log -1 --format=%h -- response.js)"',
  `cat > migration.test.js <<'JS'
const { buildRequest } = require('./request.js');
const { parseResponse } = require('./response.js');
const req = buildRequest('pay', { amount: 5 });
const res = parseResponse(JSON.stringify({ id: 'p1', amount: JSON.parse(req.body).amount }));
if (res.amount !== 5) { console.error('round trip failed'); process.exit(1); }
console.log('migration round trip ok');
JS`,
  `baton tool call ${CODE_HOST_TOOL} ${OPEN_PR_STEP} --params '{"title":"Migration tests for the v2 API","base":"main"}' > PR.json`,
  'echo "pull request: $(cat PR.json)"',
  commitAll('migration tests for the v2 API'),
].join('\n');

export const TESTS_CHECK = 'node migration.test.js';
