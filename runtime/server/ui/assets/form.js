// Forms generated from a JSON Schema (the subset types.JSONSchema writes):
// records become fieldsets, strings text inputs, enums and booleans
// selects, numbers text inputs, anything else a JSON text area. The form
// sends what was entered; the server checks it and its errors are shown
// next to their inputs.
let seq = 0;

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === undefined || v === null) continue;
    if (k === 'text') e.textContent = v; else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k) e.append(k);
  return e;
}

// unwrap returns the schema inside an optional's anyOf and whether it was one.
function unwrap(s) {
  if (s && Array.isArray(s.anyOf) && s.anyOf.length === 2) {
    const nn = s.anyOf.find((x) => x.type !== 'null');
    if (nn && s.anyOf.some((x) => x.type === 'null')) return [nn, true];
  }
  return [s || {}, false];
}

function describe(s) {
  if (s.enum) return 'one of ' + s.enum.join(', ');
  switch (s.type) {
    case 'integer': return 'a whole number';
    case 'number': return 'a number';
    case 'boolean': return 'true or false';
    case 'string': return s.pattern ? 'text (a duration such as 30s)' : 'text';
    case 'array': return 'a JSON list';
    case 'object': return 'a JSON object';
  }
  return 'any JSON value';
}

export function buildForm(schema, label) {
  const slots = new Map(); // path → {input, err}
  const top = h('p', { class: 'error', role: 'alert', hidden: true });

  function scalar(s, path, name, optional) {
    const id = `f${++seq}`;
    const err = h('p', { class: 'error', id: id + '-err', hidden: true });
    const hint = h('p', { class: 'hint', id: id + '-hint', text: describe(s) + (optional ? ' (optional)' : '') });
    let input, read;
    if (s.enum || s.type === 'boolean') {
      const opts = s.enum ? s.enum.map(String) : ['true', 'false'];
      input = h('select', { id, 'data-path': path });
      input.append(h('option', { value: '', text: '— choose —' }));
      for (const o of opts) input.append(h('option', { value: o, text: o }));
      read = () => (input.value === '' ? undefined : s.type === 'boolean' ? input.value === 'true' : input.value);
    } else if (s.type === 'string' || s.type === 'integer' || s.type === 'number') {
      input = h('input', { id, type: 'text', 'data-path': path, inputmode: s.type === 'string' ? false : 'decimal', autocomplete: 'off' });
      read = () => {
        const v = input.value;
        if (s.type === 'string') return v === '' && optional ? undefined : v;
        if (v.trim() === '') return undefined;
        const n = Number(v);
        return Number.isFinite(n) ? n : v; // the server says what is wrong
      };
    } else {
      input = h('textarea', { id, 'data-path': path, rows: 3, spellcheck: 'false' });
      if (s.default !== undefined) input.value = JSON.stringify(s.default);
      read = () => {
        if (input.value.trim() === '') return undefined;
        try { return JSON.parse(input.value); } catch { throw { path, message: 'this is not valid JSON' }; }
      };
    }
    input.setAttribute('aria-describedby', `${id}-hint ${id}-err`);
    slots.set(path, { input, err });
    const wrap = h('div', { class: 'field' }, h('label', { for: id, text: name + (optional ? ' (optional)' : '') }), input, hint, err);
    return { el: wrap, read };
  }

  function field(raw, path, name, optional) {
    const [s, nullable] = unwrap(raw);
    optional = optional || nullable;
    if (s.type === 'object' && s.properties) {
      const req = new Set(s.required || []);
      const kids = Object.keys(s.properties).map((k) => [k, field(s.properties[k], `${path}.${k}`, k, !req.has(k))]);
      const err = h('p', { class: 'error', hidden: true });
      slots.set(path, { input: null, err });
      const fs = h('fieldset', {}, h('legend', { text: name + (optional ? ' (optional)' : '') }), err, ...kids.map(([, f]) => f.el));
      return {
        el: fs,
        read: () => {
          const o = {};
          let any = false;
          for (const [k, f] of kids) { const v = f.read(); if (v !== undefined) { o[k] = v; any = true; } }
          return !any && optional ? undefined : o;
        },
      };
    }
    return scalar(s, path, name, optional);
  }

  const root = field(schema, '$', label, false);
  const el = h('div', {}, top, root.el);

  function clear() {
    top.hidden = true; top.textContent = '';
    for (const { input, err } of slots.values()) {
      err.hidden = true; err.textContent = '';
      if (input) input.removeAttribute('aria-invalid');
    }
  }

  // show marks each error at the input of its path (the nearest enclosing
  // one); it returns the first input marked, for focus.
  function show(errors) {
    clear();
    let first = null;
    for (const { path, message } of errors) {
      let p = path || '$';
      while (!slots.has(p) && p.includes('.')) p = p.slice(0, Math.max(p.lastIndexOf('.'), p.lastIndexOf('[')));
      const slot = slots.get(p);
      if (!slot) { top.hidden = false; top.textContent += message + ' '; continue; }
      slot.err.hidden = false;
      slot.err.textContent = (slot.err.textContent ? slot.err.textContent + ' ' : '') + message;
      if (slot.input) { slot.input.setAttribute('aria-invalid', 'true'); first = first || slot.input; }
    }
    return first;
  }

  function value() {
    const v = root.read();
    return v === undefined ? null : v;
  }

  return { el, value, show, clear };
}
