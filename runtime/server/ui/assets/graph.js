// Draws a run's graph (the picture agentc graph renders, as the API sends
// it: nodes with caption, shape and state; edges with labels) as SVG, in
// layers from start.
const SVGNS = 'http://www.w3.org/2000/svg';
const W = 190, H = 58, GAPX = 46, GAPY = 64, PAD = 24;
const STATE_TEXT = { finished: '✓ finished', failed: '✗ failed', waiting: '⏸ waiting', current: '▶ running', idle: '' };

function el(name, attrs, parent) {
  const e = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

// layout ranks the nodes by their longest path from start over the edges
// that are not back edges (found by a depth-first walk), then orders each
// rank by the mean position of its predecessors.
export function layout(graph) {
  const names = graph.nodes.map((n) => n.name);
  const idx = new Map(names.map((n, i) => [n, i]));
  const out = names.map(() => []);
  graph.edges.forEach((e, k) => { if (idx.has(e.from) && idx.has(e.to)) out[idx.get(e.from)].push({ to: idx.get(e.to), k }); });
  const back = new Set();
  const state = names.map(() => 0);
  const visit = (i) => {
    state[i] = 1;
    for (const { to, k } of out[i]) {
      if (state[to] === 1) back.add(k);
      else if (state[to] === 0) visit(to);
    }
    state[i] = 2;
  };
  const start = idx.has('start') ? idx.get('start') : 0;
  visit(start);
  names.forEach((_, i) => { if (state[i] === 0) visit(i); });
  const rank = names.map(() => 0);
  for (let pass = 0; pass < names.length; pass++) {
    let changed = false;
    graph.edges.forEach((e, k) => {
      if (back.has(k) || !idx.has(e.from) || !idx.has(e.to)) return;
      const a = idx.get(e.from), b = idx.get(e.to);
      if (rank[b] < rank[a] + 1) { rank[b] = rank[a] + 1; changed = true; }
    });
    if (!changed) break;
  }
  if (idx.has('end')) rank[idx.get('end')] = Math.max(...rank, 0) + (names.length > 1 ? 0 : 0);
  const maxRank = Math.max(...rank);
  if (idx.has('end')) {
    const e = idx.get('end');
    const others = rank.filter((_, i) => i !== e);
    rank[e] = Math.max(maxRank, others.length ? Math.max(...others) + 1 : 0);
  }
  const layers = [];
  rank.forEach((r, i) => { (layers[r] = layers[r] || []).push(i); });
  const pos = names.map(() => 0);
  layers.forEach((layer, r) => {
    if (!layer) return;
    if (r > 0) {
      const bary = (i) => {
        const ps = graph.edges.filter((e, k) => !back.has(k) && idx.get(e.to) === i).map((e) => pos[idx.get(e.from)]);
        return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : 0;
      };
      layer.sort((a, b) => bary(a) - bary(b) || a - b);
    }
    layer.forEach((i, j) => { pos[i] = j - (layer.length - 1) / 2; });
  });
  // A lane on each side carries the edges that skip ranks (left) and the
  // back edges (right).
  const LANE = 110;
  const inner = Math.max(...layers.map((l) => (l ? l.length : 0))) * (W + GAPX) - GAPX;
  const width = inner + 2 * PAD + 2 * LANE;
  const xy = names.map((_, i) => ({ x: width / 2 + pos[i] * (W + GAPX) - W / 2, y: PAD + rank[i] * (H + GAPY) }));
  return { xy, back, rank, width, left: PAD + LANE / 2, right: width - PAD - LANE / 2, height: PAD * 2 + (layers.length) * (H + GAPY) - GAPY, idx };
}

function shape(g, n, x, y) {
  switch (n.shape) {
    case 'terminal': return el('ellipse', { cx: x + W / 2, cy: y + H / 2, rx: W / 2 - 30, ry: H / 2 - 6 }, g);
    case 'interrupt': return el('polygon', { points: `${x + 14},${y} ${x + W},${y} ${x + W - 14},${y + H} ${x},${y + H}` }, g);
    case 'join': return el('polygon', { points: `${x + 14},${y} ${x + W - 14},${y} ${x + W},${y + H / 2} ${x + W - 14},${y + H} ${x + 14},${y + H} ${x},${y + H / 2}` }, g);
    case 'map':
      el('rect', { x: x + 5, y: y - 5, width: W, height: H, rx: 4 }, g);
      return el('rect', { x, y, width: W, height: H, rx: 4 }, g);
    default: return el('rect', { x, y, width: W, height: H, rx: 4 }, g);
  }
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }

export function nodeLabel(n) {
  const what = n.caption.split('\n').slice(1).join(' ');
  return `${n.name}${what ? ', ' + what : ''}: ${n.state === 'idle' ? 'not reached' : n.state}`;
}

// render returns the SVG element for graph.
export function render(graph) {
  const L = layout(graph);
  const svg = el('svg', { class: 'graph', viewBox: `0 0 ${L.width} ${L.height}`, width: L.width, height: L.height, role: 'img', 'aria-labelledby': 'graph-title' });
  el('title', { id: 'graph-title' }, svg).textContent = `Graph ${graph.name}: ` + graph.nodes.map(nodeLabel).join('; ');
  const defs = el('defs', {}, svg);
  const m = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, defs);
  el('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#6e7781' }, m);
  const edges = el('g', { 'aria-hidden': 'true' }, svg);
  const pairs = new Map(); // parallel edges are spread apart
  graph.edges.forEach((e) => { const key = e.from + '>' + e.to; pairs.set(key, (pairs.get(key) || 0) + 1); });
  const seen = new Map();
  graph.edges.forEach((e, k) => {
    if (!L.idx.has(e.from) || !L.idx.has(e.to)) return;
    const ia = L.idx.get(e.from), ib = L.idx.get(e.to);
    const a = L.xy[ia], b = L.xy[ib];
    const key = e.from + '>' + e.to;
    const nth = seen.get(key) || 0;
    seen.set(key, nth + 1);
    const spread = (nth - ((pairs.get(key) || 1) - 1) / 2) * 56;
    const g = el('g', { class: 'edge' + (e.dashed ? ' dashed' : '') }, edges);
    let d, lx, ly;
    if (L.back.has(k) || b.y <= a.y) {
      const side = L.right + spread / 2;
      d = `M ${a.x + W} ${a.y + H / 2} C ${side} ${a.y + H / 2}, ${side} ${b.y + H / 2}, ${b.x + W} ${b.y + H / 2}`;
      lx = side - 10; ly = (a.y + b.y) / 2 + H / 2;
    } else if (L.rank[ib] - L.rank[ia] > 1) {
      const side = L.left + spread / 2;
      d = `M ${a.x} ${a.y + H / 2} C ${side} ${a.y + H / 2}, ${side} ${b.y + H / 2}, ${b.x} ${b.y + H / 2}`;
      lx = side + 10; ly = (a.y + b.y) / 2 + H / 2;
    } else {
      const x1 = a.x + W / 2 + spread / 2, y1 = a.y + H, x2 = b.x + W / 2 + spread / 2, y2 = b.y;
      d = `M ${x1} ${y1} C ${x1} ${y1 + GAPY / 2}, ${x2} ${y2 - GAPY / 2}, ${x2} ${y2}`;
      lx = (x1 + x2) / 2 + spread; ly = (y1 + y2) / 2;
    }
    el('path', { d, 'marker-end': 'url(#arrow)' }, g);
    if (e.label) {
      const t = el('text', { x: lx, y: ly + 4, 'text-anchor': 'middle' }, g);
      t.textContent = clip(e.label, 34);
      const w = Math.min(e.label.length, 34) * 5.8 + 6;
      g.insertBefore(el('rect', { x: lx - w / 2, y: ly - 8, width: w, height: 15, rx: 3 }), t);
    }
  });
  const nodes = el('g', {}, svg);
  graph.nodes.forEach((n, i) => {
    const { x, y } = L.xy[i];
    const g = el('g', { class: `node st-${n.state}`, 'data-node': n.name, 'data-state': n.state }, nodes);
    shape(g, n, x, y);
    const lines = n.caption.split('\n');
    const name = el('text', { x: x + W / 2, y: y + (lines.length > 1 ? 18 : H / 2 + 4), 'text-anchor': 'middle', 'font-weight': 700 }, g);
    name.textContent = clip(lines[0], 26);
    if (lines.length > 1) {
      const cap = el('text', { x: x + W / 2, y: y + 33, 'text-anchor': 'middle', class: 'cap' }, g);
      cap.textContent = clip(lines.slice(1).join(' '), 32);
    }
    const st = el('text', { x: x + W / 2, y: y + H - 6, 'text-anchor': 'middle', class: `state st-${n.state}` }, g);
    st.textContent = STATE_TEXT[n.state] || '';
  });
  return svg;
}

// setState marks node name of a rendered graph.
export function setState(svg, name, state) {
  const g = svg.querySelector(`g.node[data-node="${CSS.escape(name)}"]`);
  if (!g) return false;
  g.setAttribute('class', `node st-${state}`);
  g.setAttribute('data-state', state);
  const st = g.querySelector('text.state');
  if (st) { st.setAttribute('class', `state st-${state}`); st.textContent = STATE_TEXT[state] || ''; }
  return true;
}
