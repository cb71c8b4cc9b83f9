// The operator's page (SPEC U4): static files built from ui/ into dist/ui (scripts/build.ts), served
// by `baton serve` at /ui/ beside the agent API. The files are read once, when the server starts, so
// no request can name a path outside them. The page holds no secret and reads nothing itself: it
// asks the agent API with the token its user gives it, and the store decides what that token sees.
import { readdir, readFile } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { NotFoundError } from '../errors.js';
import { PACKAGE_ROOT } from '../packageRoot.js';

/** Where the build puts the page. */
export const OPERATOR_PAGE_DIR = path.join(PACKAGE_ROOT, 'dist', 'ui');
/** Where the page is served. */
export const OPERATOR_PAGE_PATH = '/ui/';

/** What the page is told of its server (nothing secret: any visitor reads it). */
export interface OperatorPageConfig {
  /** The Temporal Web UI the page links each workflow to, and its namespace. */
  temporalUi?: { url: string; namespace: string };
}

export interface OperatorPage {
  /** Answers `GET path` if it is the page's; false when it is not. */
  serve(path: string, res: http.ServerResponse): boolean;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

/**
 * What every answer of the page carries: its scripts and styles are its own files only (what an
 * agent wrote into a task, a note or an object can never run as script here), it is framed by
 * nobody, and its address (whose fragment may hold a token) is sent nowhere.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Loads the built page from `dir`; a checkout that was not built is told how to build it. */
export async function loadOperatorPage(config: OperatorPageConfig, dir = OPERATOR_PAGE_DIR): Promise<OperatorPage> {
  const files = new Map<string, { body: Buffer; type: string; immutable: boolean }>();
  let entries: string[];
  try {
    entries = (await readdir(dir, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
  } catch (error) {
    throw new NotFoundError(`the operator's page is not built in ${dir} (${(error as Error).message}): run npm run build`);
  }
  for (const file of entries) {
    const type = CONTENT_TYPES[path.extname(file)];
    if (!type) continue;
    // Vite names its bundles by their content hash: those may be kept for good.
    files.set(file.split(path.sep).join('/'), { body: await readFile(path.join(dir, file)), type, immutable: file.startsWith('assets') });
  }
  if (!files.has('index.html')) throw new NotFoundError(`the operator's page in ${dir} has no index.html: run npm run build`);
  files.set('config.json', { body: Buffer.from(JSON.stringify(config)), type: CONTENT_TYPES['.json']!, immutable: false });

  return {
    serve(requestPath, res) {
      if (requestPath === '/' || requestPath === OPERATOR_PAGE_PATH.slice(0, -1)) {
        res.writeHead(302, { location: OPERATOR_PAGE_PATH, ...PAGE_HEADERS }).end();
        return true;
      }
      if (!requestPath.startsWith(OPERATOR_PAGE_PATH)) return false;
      const file = files.get(requestPath.slice(OPERATOR_PAGE_PATH.length) || 'index.html');
      if (!file) return false;
      res
        .writeHead(200, {
          'content-type': file.type,
          'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
          ...PAGE_HEADERS,
        })
        .end(file.body);
      return true;
    },
  };
}
