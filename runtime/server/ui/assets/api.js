// The inspector's JSON API (spec/inspector.md), with the bearer token kept
// in sessionStorage.
const base = new URL('api/v1/', new URL('.', document.baseURI)).pathname;
const KEY = 'agentc.token';

export function token() { return sessionStorage.getItem(KEY) || ''; }
export function setToken(t) { if (t) sessionStorage.setItem(KEY, t); else sessionStorage.removeItem(KEY); }

export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status; this.code = e.code || ''; this.fields = e.fields || [];
  }
}

function headers(extra) {
  const h = Object.assign({ Accept: 'application/json' }, extra || {});
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

export function url(path, params) {
  const u = new URL(base + path.replace(/^\//, ''), location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => u.searchParams.append(k, x));
    else if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, v);
  }
  return u.pathname + u.search;
}

async function answer(res) {
  let body = null;
  const ct = res.headers.get('Content-Type') || '';
  if (ct.startsWith('application/json')) body = await res.json();
  if (!res.ok) throw new APIError(res.status, body);
  return body;
}

export async function get(path, params) {
  return answer(await fetch(url(path, params), { headers: headers() }));
}

export async function post(path, body, params) {
  return answer(await fetch(url(path, params), {
    method: 'POST', headers: headers({ 'Content-Type': 'application/json' }), body: JSON.stringify(body || {}),
  }));
}

export async function text(path, params) {
  const res = await fetch(url(path, params), { headers: headers({ Accept: '*/*' }) });
  if (!res.ok) throw new APIError(res.status, null);
  return res.text();
}

// stream follows a run's event stream (SSE over fetch, so that the token
// goes in a header). onEvent(kind, data) for each event; it resolves when
// the stream ends; abort with the signal.
export async function stream(run, after, onEvent, signal) {
  const res = await fetch(url(`runs/${encodeURIComponent(run)}/stream`, { after }), {
    headers: headers({ Accept: 'text/event-stream' }), signal,
  });
  if (!res.ok) throw new APIError(res.status, null);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i); buf = buf.slice(i + 2);
      let kind = 'message', data = '', id = '';
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const k = c < 0 ? line : line.slice(0, c);
        const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
        if (k === 'event') kind = v; else if (k === 'data') data += v; else if (k === 'id') id = v;
      }
      if (!data) continue;
      let parsed = null;
      try { parsed = JSON.parse(data); } catch { continue; }
      onEvent(kind, parsed, id);
    }
  }
}
