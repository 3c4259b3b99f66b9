// The run inspector (spec/inspector.md) in Debian's Chromium, driven by
// playwright-core: the real agentc binary serves examples/support (and
// examples/skills, for an evolution candidate) on free loopback ports with
// the scripted models; the test works the pages as a person would and
// writes a screenshot of each page.
//
//   AGENTC_BIN   the binary (default: <repo>/.bin/agentc)
//   SCREENSHOTS  where screenshots go (default: test/browser/screenshots)
//   CHROMIUM     the browser (default: /usr/bin/chromium)
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const bin = process.env.AGENTC_BIN || path.join(repo, '.bin/agentc');
const shots = path.resolve(process.env.SCREENSHOTS || path.join(here, 'screenshots'));
const browserPath = process.env.CHROMIUM || '/usr/bin/chromium';
const work = mkdtempSync(path.join(tmpdir(), 'agentc-browser-'));
const children = [];
let step = 0;

function log(msg) { console.log(`[${new Date().toISOString().slice(11, 23)}] ${msg}`); }

// serve starts `agentc serve FILE` on a free loopback port and resolves to
// its base URL once /healthz answers.
async function serve(dir, file, tokens, name) {
  const args = ['serve', file, '--addr', '127.0.0.1:0', '--data', path.join(work, name + '-data'), '--log', 'off'];
  for (const t of tokens) args.push('--token', t);
  const env = { ...process.env };
  delete env.OPENAI_API_KEY; // the scripted models: hermetic
  const child = spawn(bin, args, { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let err = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: agentc serve did not start:\n${err}`)), 30000);
    child.stderr.on('data', (b) => {
      err += b;
      const m = /agentc: serving \S+ on (http:\/\/127\.0\.0\.1:\d+) /.exec(err);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${name}: agentc serve exited ${code}:\n${err}`)); });
  });
  for (let i = 0; i < 100; i++) {
    try { if ((await fetch(url + '/healthz')).ok) return url; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${name}: /healthz never answered`);
}

async function api(base, tok, p, opts = {}) {
  const res = await fetch(base + p, { ...opts, headers: { Authorization: 'Bearer ' + tok, 'Content-Type': 'application/json', ...(opts.headers || {}) } });
  const body = await res.json().catch(() => null);
  return { status: res.status, body };
}

async function shot(page, name) {
  const file = path.join(shots, `${String(++step).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  log(`screenshot ${file}`);
}

async function until(fn, what, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main() {
  if (!existsSync(browserPath)) throw new Error(`no Chromium at ${browserPath} (test/all.sh installs Debian's chromium)`);
  if (!existsSync(bin)) throw new Error(`no agentc binary at ${bin} (build it: go build -o .bin/agentc ./cmd/agentc)`);
  rmSync(shots, { recursive: true, force: true });
  mkdirSync(shots, { recursive: true });
  log(`screenshots go to ${shots}`);
  // The examples run from a copy: approving a candidate publishes a skill
  // folder next to the program.
  const ex = path.join(work, 'examples');
  for (const d of ['support', 'skills', 'common']) cpSync(path.join(repo, 'examples', d), path.join(ex, d), { recursive: true });
  writeFileSync(path.join(ex, 'agentc.yaml'), '# the project root of the copied examples\n');

  const support = await serve(path.join(ex, 'support'), 'support.agent', ['ta=alice', 'tb=bob'], 'support');
  const skills = await serve(path.join(ex, 'skills'), 'skills.agent', ['tc=carol'], 'skills');
  log(`support on ${support}, skills on ${skills}`);

  // alice's run of the support example, through the OpenAI endpoint: it
  // triages, scans, writes and waits for the approval.
  const question = 'prod.example.com fails with x509: certificate signed by unknown authority';
  let res = await fetch(support + '/v1/chat/completions', {
    method: 'POST', headers: { Authorization: 'Bearer ta', 'Content-Type': 'application/json', 'X-Agentc-Session': 'incident-1' },
    body: JSON.stringify({ model: 'support', messages: [{ role: 'user', content: question }] }),
  });
  assert.equal(res.status, 200, 'the support run starts');
  assert.equal(res.headers.get('x-agentc-status'), 'interrupted');
  const runId = res.headers.get('x-agentc-run');
  assert.ok(runId, 'the run id is in X-Agentc-Run');

  const browser = await chromium.launchPersistentContext(path.join(work, 'profile'), {
    executablePath: browserPath, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  try {
    const page = await browser.newPage();
    const consoleErrors = [];
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));

    // The sign-in page, then the runs.
    await page.goto(support + '/ui/');
    await page.getByLabel('Bearer token').fill('ta');
    await shot(page, 'sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    const row = page.locator(`tr[data-run="${runId}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), /interrupted/);
    await shot(page, 'runs');

    // The sessions, each linking to its runs.
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('heading', { name: 'Sessions', level: 1 }).waitFor();
    await page.locator('tr[data-session="incident-1"]').waitFor();
    await shot(page, 'sessions');
    await page.getByRole('link', { name: 'runs of session incident-1' }).click();
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await row.waitFor();

    // The run: the graph from the bytecode, nodes marked.
    await page.getByRole('link', { name: runId }).click();
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    const node = (n) => page.locator(`svg.graph g.node[data-node="${n}"]`);
    await node('approve').waitFor();
    for (const n of ['start', 'triage', 'scan', 'write']) assert.equal(await node(n).getAttribute('data-state'), 'finished', `${n} is finished`);
    assert.equal(await node('approve').getAttribute('data-state'), 'waiting', 'approve waits');
    assert.equal(await node('end').getAttribute('data-state'), 'idle');
    assert.equal(await node('fallback').getAttribute('data-state'), 'idle');
    assert.match(await page.locator('#node-list').innerText(), /approve, interrupt → Decision: waiting/);
    await shot(page, 'run-waiting');

    // Record every node state change the page makes from now on.
    await page.evaluate(() => {
      window.__changes = [];
      new MutationObserver((ms) => {
        for (const m of ms) {
          const g = m.target;
          if (g.matches && g.matches('g.node') && m.attributeName === 'data-state') window.__changes.push(`${g.dataset.node}:${g.dataset.state}`);
        }
      }).observe(document.getElementById('graph'), { subtree: true, attributes: true, attributeFilter: ['data-state'] });
    });

    // Answer the approval: first an invalid value, typed as JSON: the
    // server's error shows next to the input, naming the field.
    const form = page.locator('form[data-interrupt="investigate/approve"]');
    await form.getByLabel('answer as JSON').check();
    const jsonIn = form.getByLabel('Answer (JSON)');
    await jsonIn.fill('{"approved": "yes"}');
    await form.getByRole('button', { name: 'Send answer' }).click();
    await until(async () => (await jsonIn.getAttribute('aria-invalid')) === 'true', 'the inline error on the JSON answer');
    assert.match(await form.locator('#json-approve-err').innerText(), /\$\.approved: want boolean, got string/);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'json-approve', 'focus moves to the answer in error');
    await shot(page, 'answer-invalid-json');
    await form.getByLabel('answer as JSON').uncheck();
    // Then the form without the required field: the error is at its input.
    await form.getByLabel('feedback (optional)').fill('Looks right.');
    await form.getByRole('button', { name: 'Send answer' }).click();
    const approved = form.getByLabel('approved', { exact: true });
    await until(async () => (await approved.getAttribute('aria-invalid')) === 'true', 'the inline error');
    const errId = (await approved.getAttribute('aria-describedby')).split(' ').pop();
    assert.match(await page.locator('#' + errId).innerText(), /missing required field/);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.path), '$.approved', 'focus moves to the field in error');
    assert.equal(await node('approve').getAttribute('data-state'), 'waiting', 'the run still waits');
    await shot(page, 'answer-invalid');

    // Then a valid answer: the run completes, and the page marks approve
    // and end finished from the live stream.
    await approved.selectOption('true');
    await form.getByRole('button', { name: 'Send answer' }).click();
    await until(async () => (await page.locator('#run-status').getAttribute('data-status')) === 'completed', 'the run to complete');
    await until(async () => (await page.evaluate(() => window.__changes || [])).includes('end:finished'), 'end to turn finished live');
    const changes = await page.evaluate(() => window.__changes);
    log(`live node changes: ${changes.join(', ')}`);
    assert.ok(changes.indexOf('approve:finished') >= 0 && changes.indexOf('approve:finished') < changes.indexOf('end:finished'), 'approve finishes before end, live');
    for (const n of ['approve', 'end']) assert.equal(await node(n).getAttribute('data-state'), 'finished');
    assert.match(await page.locator('#run-output').innerText(), /intermediate/);
    await shot(page, 'run-completed');

    // Step 3's diff: write set the report.
    await page.getByRole('button', { name: 'Step 3: write' }).click();
    await page.getByRole('heading', { name: /^Step 3 \(/ }).waitFor();
    const reportRow = page.locator('#diff tr[data-field="report"]');
    await reportRow.waitFor();
    assert.match(await reportRow.innerText(), /changed[\s\S]*Example Intermediate CA/);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'step-title', 'focus moves to the step');
    await shot(page, 'step-3-diff');

    // The ledger, filtered by kind.
    await page.getByLabel('Kind').selectOption('node_finished');
    await page.locator('#ledger').getByRole('button', { name: 'Filter' }).click();
    await until(async () => (await page.locator('#events tbody tr').count()) > 0 &&
      (await page.locator('#events tbody tr[data-kind]:not([data-kind="node_finished"])').count()) === 0, 'the filtered ledger');
    await shot(page, 'ledger-node-finished');

    // Fork from step 2 with an edited question, and continue it.
    await page.getByRole('button', { name: 'Step 2: scan' }).click();
    await page.getByRole('heading', { name: /^Step 2 \(/ }).waitFor();
    const fork = page.locator('form.fork');
    await fork.getByLabel('question', { exact: true }).fill('"x509 on prod, edited in the inspector"');
    await fork.getByLabel('triage', { exact: true }).fill('{"verdict": "maybe"}'); // does not fit: refused with the field named
    await fork.getByRole('button', { name: 'Fork from step 2' }).click();
    await until(async () => (await fork.getByLabel('triage', { exact: true }).getAttribute('aria-invalid')) === 'true', 'the fork edit error');
    await shot(page, 'fork-invalid');
    const origTriage = await page.evaluate(() => JSON.stringify(JSON.parse(document.getElementById('state').textContent).triage));
    await fork.getByLabel('triage', { exact: true }).fill(origTriage);
    await fork.getByRole('button', { name: 'Fork from step 2' }).click();
    const forkLink = page.locator('#fork-link');
    await forkLink.waitFor();
    const forkId = await forkLink.innerText();
    await forkLink.click();
    await page.getByRole('heading', { name: `Run ${forkId}` }).waitFor();
    await until(async () => (await node('approve').getAttribute('data-state')) === 'waiting', 'the fork to wait on approve');
    assert.equal(await node('write').getAttribute('data-state'), 'finished', 'the fork wrote its report');
    assert.equal(await node('triage').getAttribute('data-state'), 'finished', 'the fork shows its parent\'s history');
    await shot(page, 'fork-waiting');
    // Every control of the page has a label.
    const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
      .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.textContent.trim()).map((el) => el.outerHTML.slice(0, 80)));
    assert.deepEqual(unlabeled, [], 'controls without a label');
    // The fork's approval by keyboard alone: choose, then Tab through the
    // form in order to its button, and Enter.
    const fform = page.locator('form[data-interrupt="investigate/approve"]');
    await fform.getByLabel('approved', { exact: true }).focus();
    await page.keyboard.press('ArrowDown'); // — choose — → true
    assert.equal(await fform.getByLabel('approved', { exact: true }).inputValue(), 'true');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.path), '$.feedback', 'Tab goes to feedback');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Send answer', 'then to the button');
    await page.keyboard.press('Enter');
    await until(async () => (await page.locator('#run-status').getAttribute('data-status')) === 'completed', 'the fork to complete');
    const last = page.locator('#steps button[data-step]').last();
    await last.click();
    await page.getByRole('heading', { name: /^Step \d+ \(/ }).waitFor();
    assert.match(await page.locator('#state').innerText(), /"question": "x509 on prod, edited in the inspector"/, 'the fork finished with the edited value');
    await shot(page, 'fork-completed');

    // A second user sees none of alice's runs, in the pages and the API.
    const bob = await browser.newPage();
    await bob.goto(support + '/ui/#token=tb');
    await bob.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await bob.locator('#no-runs').waitFor();
    assert.equal(await bob.locator('tr[data-run]').count(), 0, 'bob lists no runs');
    await shot(bob, 'bob-runs');
    await bob.goto(support + `/ui/#/run/${runId}`);
    await bob.getByRole('heading', { name: 'Not found' }).waitFor();
    await shot(bob, 'bob-alice-run');
    const list = await api(support, 'tb', '/ui/api/v1/runs');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.runs, []);
    for (const p of [`/ui/api/v1/runs/${runId}`, `/ui/api/v1/runs/${forkId}/checkpoints`, `/ui/api/v1/runs/${runId}/steps/3`, '/ui/api/v1/sessions/incident-1/events']) {
      const r = await api(support, 'tb', p);
      assert.equal(r.status, 404, `bob: GET ${p}`);
    }
    const forged = await api(support, 'tb', `/ui/api/v1/runs/${runId}/fork`, { method: 'POST', body: JSON.stringify({ step: 1 }) });
    assert.equal(forged.status, 404, 'bob cannot fork alice\'s run');
    assert.equal((await api(support, 'ta', `/ui/api/v1/runs/${runId}`)).status, 200, 'alice still sees hers');

    // An evolution candidate: the skills example's reviewer drafts one
    // after carol's run; she approves it in the page.
    res = await fetch(skills + '/v1/chat/completions', {
      method: 'POST', headers: { Authorization: 'Bearer tc', 'Content-Type': 'application/json', 'X-Agentc-Session': 'weekly' },
      body: JSON.stringify({ model: 'skills', messages: [{ role: 'user', content: "Write this week's status report for the payments team, then make it final." }] }),
    });
    assert.equal(res.status, 200, 'the skills run');
    const skillsRun = res.headers.get('x-agentc-run');
    const cand = await until(async () => (await api(skills, 'tc', '/ui/api/v1/candidates')).body.candidates[0], 'a candidate', 30000);
    const carol = await browser.newPage();
    await carol.goto(skills + `/ui/#token=tc`);
    await carol.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await carol.goto(skills + `/ui/#/run/${skillsRun}`);
    await carol.getByRole('heading', { name: `Run ${skillsRun}` }).waitFor();
    await carol.getByRole('button', { name: /^report\.md/ }).click();
    await carol.getByRole('button', { name: /^revision 1/ }).click();
    await carol.getByRole('button', { name: /^revision 2/ }).click();
    await carol.locator('pre[aria-label="report.md revision 2"]').waitFor();
    await shot(carol, 'artifacts');
    await carol.getByRole('link', { name: 'Evolution' }).click();
    await carol.getByRole('heading', { name: 'Evolution candidates' }).waitFor();
    const art = carol.locator(`article[data-candidate="${cand.id}"]`);
    await art.waitFor();
    await shot(carol, 'candidates');
    await art.getByRole('button', { name: `Approve ${cand.proposal.name}` }).click();
    await art.locator('p.decided').waitFor();
    assert.match(await art.locator('p.decided').innerText(), /active/);
    assert.match(await art.locator('.badge').innerText(), /active/);
    assert.ok(await art.getByRole('button', { name: `Approve ${cand.proposal.name}` }).isDisabled(), 'a decided candidate cannot be decided again');
    await shot(carol, 'candidate-approved');
    const after = await api(skills, 'tc', `/ui/api/v1/candidates/${cand.id}`);
    assert.equal(after.body.status, 'active');
    assert.ok(existsSync(path.join(after.body.dir, 'SKILL.md')), 'the approved skill is published');

    // A narrow window: the run page reflows to one column.
    await page.setViewportSize({ width: 420, height: 900 });
    await page.goto(support + `/ui/#/run/${runId}`);
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px in a narrow window`);
    await shot(page, 'run-narrow');

    // The refused answer and fork edits are 422s the browser logs; nothing else.
    assert.deepEqual(consoleErrors.filter((m) => !/status of 422/.test(m)), [], 'no errors in the console');
  } catch (e) {
    for (const [i, p] of browser.pages().entries()) {
      await p.screenshot({ path: path.join(shots, `failure-${i}.png`), fullPage: true }).catch(() => {});
      log(`page ${i} ${p.url()}: live region ${await p.locator('#live').innerText().catch(() => '?')}`);
    }
    throw e;
  } finally {
    await browser.close();
  }
}

let code = 0;
try {
  await main();
  log('ok: the inspector passed in Chromium');
} catch (e) {
  console.error(e);
  code = 1;
} finally {
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.on('exit', r)))));
  rmSync(work, { recursive: true, force: true });
  log(`screenshots in ${shots}`);
}
process.exit(code);
