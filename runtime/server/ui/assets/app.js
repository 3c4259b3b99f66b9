// The inspector's pages: hash routes over the JSON API (spec/inspector.md).
import * as api from './api.js';
import { render as renderGraph, setState, nodeLabel } from './graph.js';
import { buildForm } from './form.js';

const main = document.getElementById('main');
const live = document.getElementById('live');
let me = null;
let stopStream = null;

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === undefined || v === null) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k !== null && k !== undefined && k !== false) e.append(k);
  return e;
}

function announce(msg) { live.textContent = ''; setTimeout(() => { live.textContent = msg; }, 30); }
function fmtTime(t) { return t ? new Date(t).toLocaleString() : ''; }
function status(s) { return h('span', { class: `badge s-${s}`, text: s }); }
function tokens(u) { return u ? `${u.prompt_tokens || 0} in, ${u.completion_tokens || 0} out` : '—'; }
function cost(c) { return c === undefined || c === null ? '—' : '$' + c.toFixed(4); }
function pretty(v) { return JSON.stringify(v, null, 2); }
function esc(s) { return encodeURIComponent(s); }

function view(title, ...kids) {
  if (stopStream) { stopStream(); stopStream = null; }
  main.replaceChildren(h('h1', { id: 'view-title', tabindex: '-1', text: title }), ...kids.filter(Boolean));
  document.title = title + ' — agentc inspector';
  document.getElementById('view-title').focus();
}

function errorBox(err) {
  return h('p', { class: 'error', role: 'alert', text: err.message || String(err) });
}

// ---- login ----
function login(msg) {
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', required: true });
  const form = h('form', { 'aria-labelledby': 'view-title', onsubmit: (ev) => { ev.preventDefault(); api.setToken(input.value.trim()); me = null; location.hash = '#/'; route(); } },
    h('div', { class: 'field' }, h('label', { for: 'token', text: 'Bearer token' }), input,
      h('p', { class: 'hint', text: 'The token the server gave you (agentc serve --token, or the link agentc ui printed). It stays in this tab.' })),
    h('button', { class: 'primary', type: 'submit', text: 'Sign in' }));
  view('Sign in', msg ? h('p', { class: 'error', role: 'alert', text: msg }) : null, form);
}

async function whoami() {
  if (me) return me;
  me = await api.get('me');
  document.getElementById('who').textContent = `${me.user}${me.admin ? ' (administrator)' : ''}${me.app ? ' · app ' + me.app : ''}`;
  document.getElementById('logout').hidden = false;
  return me;
}

// ---- runs ----
async function runsView(params) {
  const statusSel = h('select', { id: 'f-status' }, ...['', 'running', 'interrupted', 'needs_decision', 'completed', 'failed', 'canceled']
    .map((s) => h('option', { value: s, text: s || 'any status', selected: s === (params.get('status') || '') })));
  const sessionIn = h('input', { id: 'f-session', type: 'text', value: params.get('session') || '' });
  const filters = h('form', { class: 'filters', 'aria-label': 'Filter runs', onsubmit: (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    if (statusSel.value) q.set('status', statusSel.value);
    if (sessionIn.value) q.set('session', sessionIn.value);
    for (const k of ['user', 'app']) if (params.get(k)) q.set(k, params.get(k));
    location.hash = '#/?' + q;
  } },
  h('div', { class: 'field' }, h('label', { for: 'f-status', text: 'Status' }), statusSel),
  h('div', { class: 'field' }, h('label', { for: 'f-session', text: 'Session' }), sessionIn),
  h('button', { type: 'submit', text: 'Filter' }));
  const list = await api.get('runs', { status: params.get('status'), session: params.get('session'), user: me.admin ? params.get('user') || undefined : undefined, app: params.get('app') || undefined, limit: 200 });
  const rows = list.runs.map((r) => h('tr', { 'data-run': r.id },
    h('td', {}, h('a', { href: `#/run/${esc(r.id)}`, text: r.id })),
    h('td', {}, status(r.status)),
    h('td', { text: r.runnable }),
    h('td', { text: (me.admin ? r.user + ' / ' : '') + r.session + (r.parent_run ? ` (fork of ${r.parent_run} @ ${r.parent_step})` : '') }),
    h('td', { class: 'mono', text: r.program_hash.slice(0, 12) }),
    h('td', { text: fmtTime(r.created) }),
    h('td', { text: fmtTime(r.updated) }),
    h('td', { text: tokens(r.usage) }),
    h('td', { text: cost(r.cost) })));
  const table = rows.length ? h('div', { class: 'table-wrap' }, h('table', { 'aria-label': 'Runs' },
    h('thead', {}, h('tr', {}, ...['Run', 'Status', 'Runnable', 'Session', 'Program', 'Started', 'Updated', 'Tokens', 'Cost'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, ...rows))) : h('p', { id: 'no-runs', text: 'No runs.' });
  view('Runs', filters, table);
}

// ---- run ----
async function runView(id) {
  const d = await api.get(`runs/${esc(id)}`);
  const r = d.run;
  const scope = { app: r.app, user: r.user };
  const graphBox = h('div', { class: 'graph-wrap', id: 'graph' });
  const nodeList = h('ul', { class: 'nodes', 'aria-label': 'Nodes and their state', id: 'node-list' });
  const actions = h('div', { id: 'actions' });
  const timeline = h('div', { id: 'steps' });
  const ledger = h('div', { id: 'ledger' });
  const arts = h('div', { id: 'artifacts' });
  const metaDl = h('dl', { class: 'meta', id: 'run-meta' });
  view(`Run ${r.id}`,
    h('nav', { 'aria-label': 'Breadcrumb' }, h('a', { href: '#/', text: 'Runs' }), ' › ', r.id),
    h('section', { class: 'panel', 'aria-labelledby': 'h-summary' }, h('h2', { id: 'h-summary', text: 'Summary' }), metaDl),
    h('section', { class: 'panel', 'aria-labelledby': 'h-graph' }, h('h2', { id: 'h-graph', text: `Graph ${d.graph.name}` }),
      h('p', { class: 'hint', text: 'The compiled graph that runs (the picture agentc graph draws); node states update live.' }), graphBox, nodeList),
    h('section', { class: 'panel', 'aria-labelledby': 'h-actions' }, h('h2', { id: 'h-actions', text: 'Actions' }), actions),
    h('section', { class: 'panel', 'aria-labelledby': 'h-steps' }, h('h2', { id: 'h-steps', text: 'Steps' }), timeline),
    h('section', { class: 'panel', 'aria-labelledby': 'h-events' }, h('h2', { id: 'h-events', text: 'Event ledger' }), ledger),
    h('section', { class: 'panel', 'aria-labelledby': 'h-arts' }, h('h2', { id: 'h-arts', text: 'Artifacts' }), arts));

  let detail = d;
  let svg = null;
  let lastSeq = 0; // the last ledger event shown
  const paint = (det) => {
    detail = det;
    const rr = det.run;
    metaDl.replaceChildren(...[
      h('dt', { text: 'Status' }), h('dd', { id: 'run-status', 'data-status': rr.status }, status(rr.status)),
      h('dt', { text: 'Runnable' }), h('dd', { text: rr.runnable }),
      h('dt', { text: 'Session' }), h('dd', { text: `${rr.app} / ${rr.user} / ${rr.session}` }),
      h('dt', { text: 'Program' }), h('dd', { class: 'mono', text: rr.program_hash }),
      rr.parent_run ? h('dt', { text: 'Forked from' }) : null,
      rr.parent_run ? h('dd', {}, h('a', { href: `#/run/${esc(rr.parent_run)}`, text: rr.parent_run }), ` at step ${rr.parent_step}`) : null,
      h('dt', { text: 'Started' }), h('dd', { text: fmtTime(rr.created) }),
      h('dt', { text: 'Updated' }), h('dd', { text: fmtTime(rr.updated) }),
      h('dt', { text: 'Step' }), h('dd', { text: String(det.step) }),
      h('dt', { text: 'Tokens' }), h('dd', { text: tokens(rr.usage) }),
      h('dt', { text: 'Cost' }), h('dd', { text: cost(rr.cost) }),
      det.error ? h('dt', { text: 'Error' }) : null, det.error ? h('dd', { class: 'error', text: `${det.error.kind}: ${det.error.message}` }) : null,
      det.output !== undefined ? h('dt', { text: 'Output' }) : null, det.output !== undefined ? h('dd', {}, h('pre', { id: 'run-output', text: typeof det.output === 'string' ? det.output : pretty(det.output) })) : null].filter(Boolean));
    svg = renderGraph(det.graph);
    graphBox.replaceChildren(svg);
    paintNodes(det.graph.nodes);
    paintActions(det);
  };
  const paintNodes = (nodes) => {
    nodeList.replaceChildren(...nodes.map((n) => h('li', { 'data-node': n.name, 'data-state': n.state, class: `st-${n.state}`, text: nodeLabel(n) })));
  };
  const mark = (name, state) => {
    if (!svg || !setState(svg, name, state)) return;
    const n = detail.graph.nodes.find((x) => x.name === name);
    if (n) { n.state = state; paintNodes(detail.graph.nodes); }
    announce(`${name} ${state}`);
  };

  // refresh repaints from the API; after a run_finished, until the run's
  // record has caught up with the status it reported.
  const refresh = async (status) => {
    let det;
    for (let i = 0; i < 30; i++) {
      det = await api.get(`runs/${esc(id)}`);
      if (!status || det.run.status === status) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    paint(det);
    await loadSteps();
    await loadLedger();
  };

  // Actions: interrupts, decisions, cancel.
  const paintActions = (det) => {
    const parts = [];
    for (const it of det.interrupts) parts.push(interruptForm(it));
    if (det.decisions.length) parts.push(decideForm(det.decisions));
    if (det.run.status === 'running') {
      parts.push(h('button', { type: 'button', class: 'danger', id: 'cancel', onclick: async (ev) => {
        ev.target.disabled = true;
        try { await api.post(`runs/${esc(id)}/cancel`, {}); announce('Cancel requested'); follow(); } catch (e) { ev.target.after(errorBox(e)); ev.target.disabled = false; }
      }, text: 'Cancel run' }));
    }
    if (!parts.length) parts.push(h('p', { text: `Nothing to do: the run is ${det.run.status}.` }));
    actions.replaceChildren(...parts);
  };
  const interruptForm = (it) => {
    const f = buildForm(it.schema || {}, 'Answer');
    const msg = h('p', { role: 'status' });
    // The same answer as JSON, for any type (and to paste a value).
    const jid = `json-${it.node}`;
    const jsonArea = h('textarea', { id: jid, rows: 4, spellcheck: 'false', 'aria-describedby': `${jid}-err` });
    const jsonErr = h('p', { class: 'error', id: `${jid}-err`, hidden: true });
    const jsonBox = h('div', { class: 'field', hidden: true }, h('label', { for: jid, text: 'Answer (JSON)' }), jsonArea, jsonErr);
    const asJSON = h('input', { type: 'checkbox', id: `asjson-${it.node}`, onchange: () => {
      if (asJSON.checked) { try { jsonArea.value = JSON.stringify(f.value()); } catch { jsonArea.value = ''; } }
      f.el.hidden = asJSON.checked; jsonBox.hidden = !asJSON.checked;
    } });
    const jsonError = (text) => {
      jsonErr.hidden = !text; jsonErr.textContent = text || '';
      if (text) jsonArea.setAttribute('aria-invalid', 'true'); else jsonArea.removeAttribute('aria-invalid');
      return text ? jsonArea : null;
    };
    const form = h('form', { class: 'interrupt', 'data-interrupt': it.id, 'aria-labelledby': `q-${it.node}`, onsubmit: async (ev) => {
      ev.preventDefault();
      let value;
      if (asJSON.checked) {
        try { value = JSON.parse(jsonArea.value); } catch { jsonError('This is not valid JSON.').focus(); return; }
      } else {
        try { value = f.value(); } catch (e) { const el = f.show([e]); if (el) el.focus(); return; }
      }
      f.clear(); jsonError(''); msg.textContent = 'Sending…';
      try {
        await api.post(`runs/${esc(id)}/answer`, { values: { [it.id]: value } });
        msg.textContent = 'Answered; the run continues.'; announce('Answer accepted; the run continues');
        follow();
      } catch (e) {
        msg.textContent = '';
        const errs = (e.fields || []).map((fe) => ({ path: fe.field.startsWith(it.id + ' ') ? fe.field.slice(it.id.length + 1) : '$', message: fe.message }));
        const list = errs.length ? errs : [{ path: '$', message: e.message }];
        const el = asJSON.checked ? jsonError(list.map((x) => `${x.path}: ${x.message}`).join('; ')) : f.show(list);
        announce('The answer was refused: ' + e.message);
        if (el) el.focus();
      }
    } },
    h('h3', { id: `q-${it.node}`, text: `${it.node}: ${it.prompt}` }),
    h('div', { class: 'field' }, h('label', { for: asJSON.id }, asJSON, ' answer as JSON')),
    f.el, jsonBox, h('button', { type: 'submit', class: 'primary', text: 'Send answer' }), msg);
    return form;
  };
  const decideForm = (decisions) => {
    const rows = decisions.map((dd, i) => {
      const sel = h('select', { id: `dec-${i}` }, ...['done', 'retry', 'fail'].map((a) => h('option', { value: a, text: a })));
      const val = h('textarea', { id: `decv-${i}`, rows: 2, 'aria-describedby': `decv-${i}-hint` });
      return { dd, sel, val, el: h('fieldset', {}, h('legend', { text: `${dd.node} (attempt ${dd.attempt}, key ${dd.key})` }),
        h('div', { class: 'field' }, h('label', { for: `dec-${i}`, text: 'Outcome' }), sel),
        h('div', { class: 'field' }, h('label', { for: `decv-${i}`, text: 'Result (JSON, for done)' }), val, h('p', { class: 'hint', id: `decv-${i}-hint`, text: 'done: the side effect happened, with this result; retry: call it again with the same idempotency key; fail: the attempt failed.' }))) };
    });
    const err = h('div', { role: 'alert' });
    return h('form', { 'aria-labelledby': 'h-decide', onsubmit: async (ev) => {
      ev.preventDefault();
      const decisions = {};
      for (const r of rows) {
        r.val.removeAttribute('aria-invalid');
        if (r.sel.value !== 'done') { decisions[r.dd.id] = { action: r.sel.value }; continue; }
        try { decisions[r.dd.id] = { action: 'done', value: r.val.value.trim() ? JSON.parse(r.val.value) : null }; } catch {
          r.val.setAttribute('aria-invalid', 'true');
          err.replaceChildren(h('p', { class: 'error', text: `${r.dd.node}: the result is not valid JSON` }));
          r.val.focus();
          return;
        }
      }
      try { await api.post(`runs/${esc(id)}/decide`, { decisions }); err.replaceChildren(); announce('Decided; the run continues'); follow(); }
      catch (e) { err.replaceChildren(errorBox(e), ...(e.fields || []).map((f) => h('p', { class: 'error', text: `${f.field}: ${f.message}` }))); }
    } }, h('h3', { id: 'h-decide', text: 'Side effects that need a decision' }), ...rows.map((r) => r.el), err,
    h('button', { type: 'submit', class: 'primary', text: 'Settle' }));
  };

  // Steps: the timeline, the state at a step and its diff, fork.
  const stepBox = h('div', { id: 'step-detail' });
  const stepList = h('ol', { class: 'timeline', 'aria-label': 'Checkpoints' });
  timeline.replaceChildren(stepList, stepBox);
  let shownStep = null;
  const loadSteps = async () => {
    const { checkpoints } = await api.get(`runs/${esc(id)}/checkpoints`);
    stepList.replaceChildren(...checkpoints.map((c) => h('li', {},
      h('button', { type: 'button', 'data-step': c.step, 'aria-controls': 'step-detail', 'aria-current': c.step === shownStep ? 'true' : null,
        onclick: (ev) => showStep(c.step, ev.target), text: `Step ${c.step}${c.nodes.length ? ': ' + c.nodes.join(', ') : ''}` }))));
  };
  const showStep = async (step, btn) => {
    shownStep = step;
    timeline.querySelectorAll('button[data-step]').forEach((b) => b.removeAttribute('aria-current'));
    if (btn) btn.setAttribute('aria-current', 'true');
    const s = await api.get(`runs/${esc(id)}/steps/${step}`);
    const diff = s.changes.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'diff', id: 'diff', 'aria-label': `Changes at step ${step}` },
      h('thead', {}, h('tr', {}, ...['Field', 'Change', 'Before', 'After'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, ...s.changes.map((c) => h('tr', { 'data-field': c.field },
        h('th', { scope: 'row', text: c.field }), h('td', { class: `op-${c.op}`, text: c.op }),
        h('td', {}, h('pre', { text: pretty(c.before) })), h('td', {}, h('pre', { text: pretty(c.after) }))))))) : h('p', { id: 'diff', text: 'No field changed at this step.' });
    stepBox.replaceChildren(
      h('h3', { id: 'step-title', tabindex: '-1', text: `Step ${s.step} (${s.kind})${s.previous !== null ? ', against step ' + s.previous : ''}` }),
      h('p', { text: `Next: ${s.frontier.join(', ') || 'nothing'}${s.interrupts && s.interrupts.length ? '; waiting on ' + s.interrupts.join(', ') : ''}` }),
      h('div', { class: 'grid2' }, h('div', {}, h('h4', { text: 'Diff' }), diff), h('div', {}, h('h4', { text: 'State' }), h('pre', { id: 'state', text: pretty(s.state) }))),
      forkForm(s));
    document.getElementById('step-title').focus();
  };
  const forkForm = (s) => {
    const fields = Object.entries(s.state).map(([k, v], i) => {
      const ta = h('textarea', { id: `fork-${i}`, 'data-field': k, rows: Math.min(6, pretty(v).split('\n').length), spellcheck: 'false', 'aria-describedby': `fork-${i}-err` });
      ta.value = JSON.stringify(v);
      return { k, ta, orig: ta.value, err: h('p', { class: 'error', id: `fork-${i}-err`, hidden: true }) };
    });
    const cont = h('input', { type: 'checkbox', id: 'fork-continue', checked: true });
    const msg = h('div', { role: 'status' });
    return h('form', { class: 'fork', 'aria-labelledby': 'h-fork', onsubmit: async (ev) => {
      ev.preventDefault();
      const set = {};
      let bad = false;
      for (const f of fields) {
        f.err.hidden = true; f.ta.removeAttribute('aria-invalid');
        if (f.ta.value === f.orig) continue;
        try { set[f.k] = JSON.parse(f.ta.value); } catch { f.err.hidden = false; f.err.textContent = 'This is not valid JSON.'; f.ta.setAttribute('aria-invalid', 'true'); bad = true; }
      }
      if (bad) return;
      try {
        const res = await api.post(`runs/${esc(id)}/fork`, { step: s.step, set, continue: cont.checked });
        msg.replaceChildren(h('p', {}, 'Forked as ', h('a', { href: `#/run/${esc(res.run)}`, id: 'fork-link', text: res.run }), ` (${res.status}).`));
        announce('Forked as ' + res.run);
      } catch (e) {
        msg.replaceChildren(errorBox(e));
        let first = null;
        for (const fe of e.fields || []) {
          const f = fields.find((x) => x.k === fe.field);
          if (f) { f.err.hidden = false; f.err.textContent = fe.message; f.ta.setAttribute('aria-invalid', 'true'); first = first || f.ta; }
        }
        if (first) first.focus();
      }
    } }, h('h4', { id: 'h-fork', text: `Fork from step ${s.step}` }),
    h('p', { class: 'hint', text: 'Edit fields as JSON; each edit is checked against its field\u2019s type. The fork starts a new run in the same session.' }),
    ...fields.map((f) => h('div', { class: 'field' }, h('label', { for: f.ta.id, text: f.k }), f.ta, f.err)),
    h('div', { class: 'field' }, h('label', { for: 'fork-continue' }, cont, ' continue the fork at once')),
    h('button', { type: 'submit', class: 'primary', text: `Fork from step ${s.step}` }), msg);
  };

  // The ledger, with filters and summary boundaries.
  const kindSel = h('select', { id: 'ev-kind' }, ...['', 'input', 'run_started', 'node_finished', 'node_failed', 'model_response', 'tool_result', 'state_delta', 'interrupt', 'run_error', 'run_finished', 'summary']
    .map((k) => h('option', { value: k, text: k || 'all kinds' })));
  const nodeSel = h('select', { id: 'ev-node' }, h('option', { value: '', text: 'all nodes' }), ...d.graph.nodes.map((n) => h('option', { value: n.name, text: n.name })));
  const evTable = h('div', { class: 'table-wrap' });
  const loadLedger = async () => {
    const res = await api.get(`sessions/${esc(r.session)}/events`, { ...scope, run: id, kind: kindSel.value || undefined, node: nodeSel.value || undefined });
    if (!kindSel.value && !nodeSel.value && res.last > lastSeq) lastSeq = res.last; // the stream goes on from here
    const rows = [];
    const bounds = new Map();
    for (const s of res.summaries) bounds.set(s.boundary, [...(bounds.get(s.boundary) || []), s.filter_key || 'session']);
    for (const e of res.events) {
      rows.push(h('tr', { 'data-seq': e.seq, 'data-kind': e.kind }, h('td', { text: String(e.seq) }), h('td', { text: e.kind }), h('td', { text: e.node || '' }),
        h('td', { text: String(e.step || '') }), h('td', { text: e.summary })));
      if (bounds.has(e.seq)) rows.push(h('tr', { class: 'boundary' }, h('td', { colspan: 5, text: `Summary boundary (${bounds.get(e.seq).join(', ')}): the events above are summarized` })));
    }
    evTable.replaceChildren(rows.length ? h('table', { 'aria-label': 'Events', id: 'events' },
      h('thead', {}, h('tr', {}, ...['Seq', 'Kind', 'Node', 'Step', 'Summary'].map((c) => h('th', { scope: 'col', text: c })))), h('tbody', {}, ...rows)) : h('p', { text: 'No events match.' }));
  };
  ledger.replaceChildren(h('form', { class: 'filters', 'aria-label': 'Filter events', onsubmit: (ev) => { ev.preventDefault(); loadLedger(); } },
    h('div', { class: 'field' }, h('label', { for: 'ev-kind', text: 'Kind' }), kindSel),
    h('div', { class: 'field' }, h('label', { for: 'ev-node', text: 'Node' }), nodeSel),
    h('button', { type: 'submit', text: 'Filter' })), evTable);

  // Artifacts of the session.
  const loadArtifacts = async () => {
    const { artifacts } = await api.get('artifacts', { ...scope, session: r.session });
    if (!artifacts.length) { arts.replaceChildren(h('p', { text: 'No artifacts in this session.' })); return; }
    const out = h('div', { id: 'artifact-view' });
    arts.replaceChildren(h('ul', {}, ...artifacts.map((a) => h('li', {}, h('button', { type: 'button', onclick: async () => {
      const { revisions } = await api.get('artifacts/revisions', { ...scope, session: r.session, name: a.name });
      out.replaceChildren(h('h3', { text: a.name }), h('ul', {}, ...revisions.map((rv) => h('li', {}, h('button', { type: 'button', onclick: async () => {
        const body = await api.text('artifacts/raw', { ...scope, session: r.session, name: a.name, rev: rv.revision });
        out.querySelector('pre')?.remove();
        out.append(h('pre', { 'aria-label': `${a.name} revision ${rv.revision}`, text: body }));
      }, text: `revision ${rv.revision} — ${rv.size} bytes, ${rv.mime_type || ''}, run ${rv.run}, ${fmtTime(rv.created)}` })))));
    }, text: `${a.name} (revision ${a.revision}, ${a.size} bytes)` })))), out);
  };

  // Live: follow the run's stream; refetch after each invocation's end.
  const follow = () => {
    if (stopStream) stopStream();
    const ac = new AbortController();
    stopStream = () => ac.abort();
    let finished = false;
    (async () => {
      try {
        await api.stream(id, lastSeq || undefined, async (kind, e, seq) => {
          if (seq) lastSeq = Number(seq);
          switch (kind) {
            case 'node_finished': mark(e.node, 'finished'); break;
            case 'node_failed': mark(e.node, 'failed'); break;
            case 'interrupt': for (const it of e.interrupts || []) mark(it.node, 'waiting'); break;
            case 'run_started': mark('start', 'finished'); break;
            case 'run_finished':
              finished = true;
              if (e.status === 'completed') mark('end', 'finished');
              announce(`The run is ${e.status}`);
              await refresh(e.status);
              break;
            case 'end': if (!finished && e.status !== detail.run.status) await refresh(); break;
          }
        }, ac.signal);
      } catch (e) { if (e.name !== 'AbortError') announce('The live stream stopped: ' + e.message); }
    })();
  };

  paint(d);
  await Promise.all([loadSteps(), loadLedger(), loadArtifacts()]);
  follow();
}

// ---- sessions ----
async function sessionsView() {
  // A served app, or (agentc ui) every app that has runs.
  let apps = me.app ? [me.app] : [...new Set((await api.get('runs', { limit: 500 })).runs.map((r) => r.app))].slice(0, 20);
  const rows = [];
  for (const app of apps) {
    const { sessions } = await api.get('sessions', { app: me.app ? undefined : app });
    for (const s of sessions) {
      const q = new URLSearchParams({ session: s.session });
      if (me.admin) q.set('user', s.user);
      if (!me.app) q.set('app', s.app);
      rows.push(h('tr', { 'data-session': s.session },
        h('td', {}, h('a', { href: '#/?' + q, text: s.session, 'aria-label': `runs of session ${s.session}` })),
        h('td', { text: s.user }), h('td', { text: s.app }), h('td', { text: String(s.events) }),
        h('td', { text: fmtTime(s.created) }), h('td', { text: fmtTime(s.updated) })));
    }
  }
  view('Sessions', rows.length ? h('div', { class: 'table-wrap' }, h('table', { 'aria-label': 'Sessions' },
    h('thead', {}, h('tr', {}, ...['Session', 'User', 'App', 'Events', 'Created', 'Updated'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, ...rows))) : h('p', { id: 'no-sessions', text: 'No sessions.' }));
}

// ---- candidates ----
async function candidatesView() {
  const { candidates } = await api.get('candidates');
  const items = candidates.map((c) => {
    const reason = h('input', { type: 'text', id: `reason-${c.id}` });
    const msg = h('div', { role: 'status' });
    const badge = h('dd', {}, status(c.status));
    let buttons = null;
    const act = async (verb) => {
      try {
        const res = await api.post(`candidates/${esc(c.id)}/${verb}`, verb === 'reject' ? { reason: reason.value } : {});
        msg.replaceChildren(h('p', { class: 'decided', text: `${res.proposal.name}: ${res.status}${res.dir ? ' (' + res.dir + ')' : ''}` }));
        badge.replaceChildren(status(res.status));
        for (const b of buttons.querySelectorAll('button, input')) b.disabled = true;
        announce(`${c.proposal.name} ${res.status}`);
      } catch (e) { msg.replaceChildren(errorBox(e), ...(e.fields || []).map((f) => h('p', { class: 'error', text: f.message }))); }
    };
    return h('article', { class: 'panel', 'data-candidate': c.id, 'aria-labelledby': `c-${c.id}` },
      h('h2', { id: `c-${c.id}`, text: `${c.proposal.name} (revision ${c.revision})` }),
      h('dl', { class: 'meta' }, h('dt', { text: 'Status' }), badge,
        h('dt', { text: 'Agent' }), h('dd', { text: c.agent }), h('dt', { text: 'From run' }), h('dd', {}, h('a', { href: `#/run/${esc(c.run)}`, text: c.run })),
        h('dt', { text: 'Description' }), h('dd', { text: c.proposal.description || '' }),
        h('dt', { text: 'When to use' }), h('dd', { text: c.proposal.when_to_use || '' }),
        h('dt', { text: 'Gates' }), h('dd', { text: (c.gates || []).map((g) => `${g.gate}: ${g.passed ? 'passed' : 'held'}`).join(', ') })),
      (c.proposal.steps || []).length ? h('ol', {}, ...c.proposal.steps.map((s) => h('li', { text: s }))) : null,
      c.proposal.script ? h('pre', { text: c.proposal.script }) : null,
      buttons = h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'primary', onclick: () => act('approve'), text: `Approve ${c.proposal.name}` }),
        h('label', { for: `reason-${c.id}`, text: 'Reason' }), reason,
        h('button', { type: 'button', class: 'danger', onclick: () => act('reject'), text: `Reject ${c.proposal.name}` })), msg);
  });
  view('Evolution candidates', ...(items.length ? items : [h('p', { id: 'no-candidates', text: 'No candidates wait for a decision.' })]));
}

// ---- routing ----
async function route() {
  const hash = location.hash || '#/';
  const m = /^#token=(.+)$/.exec(hash);
  if (m) { api.setToken(decodeURIComponent(m[1])); history.replaceState(null, '', location.pathname + '#/'); return route(); }
  if (hash === '#/login' || !api.token()) return login();
  try {
    await whoami();
    const [path, query] = hash.slice(1).split('?');
    const params = new URLSearchParams(query || '');
    let mm;
    if ((mm = /^\/run\/(.+)$/.exec(path))) return await runView(decodeURIComponent(mm[1]));
    if (path === '/candidates') return await candidatesView();
    if (path === '/sessions') return await sessionsView();
    return await runsView(params);
  } catch (e) {
    if (e.status === 401) { api.setToken(''); me = null; return login('That token was not accepted.'); }
    view(e.status === 404 ? 'Not found' : 'Error', errorBox(e), h('p', {}, h('a', { href: '#/', text: 'Back to the runs' })));
  }
}

document.getElementById('logout').addEventListener('click', () => { api.setToken(''); me = null; document.getElementById('who').textContent = ''; document.getElementById('logout').hidden = true; location.hash = '#/login'; });
window.addEventListener('hashchange', route);
route();
