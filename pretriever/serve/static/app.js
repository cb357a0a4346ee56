// The pretriever page: plain DOM, no build step. Every request goes through api(), which adds the
// API key (kept in localStorage) and shows the key box when the server answers 401.
"use strict";
const $ = (id) => document.getElementById(id);
const state = { info: null, page: 1, pages: 1, qpage: 1, qpages: 1 };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

async function api(path, body) {
  const headers = { "content-type": "application/json" };
  const key = localStorage.getItem("pretriever-key");
  if (key) headers["x-api-key"] = key;
  const res = await fetch(path, body ? { method: "POST", headers, body: JSON.stringify(body) } : { headers });
  const data = await res.json().catch(() => ({ error: res.statusText }));
  if (res.status === 401) $("keybox").hidden = false;
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

// Text with spans [{start, end, kind}] wrapped in <mark class=kind>; spans are character offsets.
function highlighted(text, spans) {
  const out = document.createDocumentFragment();
  let at = 0;
  for (const s of [...(spans || [])].sort((a, b) => a.start - b.start)) {
    if (s.start < at) continue;
    out.append(text.slice(at, s.start), el("mark", { class: s.kind, title: s.kind.replace("_", " ") }, text.slice(s.start, s.end)));
    at = s.end;
  }
  out.append(text.slice(at));
  return out;
}

function passageLink(id, source, label) {
  return el("a", { href: `#passage=${encodeURIComponent(source)}:${encodeURIComponent(id)}`, onclick: (e) => { e.preventDefault(); showPassage(source, id); } }, label || id);
}

async function showPassage(source, id) {
  try {
    const p = await api(`/passages/${encodeURIComponent(id)}?source=${source}`);
    $("passage-title").textContent = `${p.title || ""} (${p.passage_id})`;
    $("passage-text").textContent = p.text;
  } catch (err) { $("passage-title").textContent = "Passage"; $("passage-text").textContent = err.message; }
  $("passage").showModal();
}

function hitCard(h) {
  const cls = h.relevance > 0 ? "hit relevant" : h.relevance === 0 ? "hit judged-no" : "hit";
  const marks = [];
  if (h.relevance !== null && h.relevance !== undefined) marks.push(el("span", { class: h.relevance > 0 ? "badge" : "badge no" }, h.relevance > 0 ? `judged relevant (${h.relevance})` : "judged not relevant"));
  if (h.has_answer) marks.push(el("span", { class: "badge" }, "answer"));
  const text = h.text && h.text.length > 320 ? h.text.slice(0, 320) + "\u2026" : h.text;
  return el("article", { class: cls },
    el("div", { class: "meta" }, `#${h.rank} \u00b7 `, passageLink(h.id, "index"), ` \u00b7 ${h.score.toFixed(4)}`, ...marks),
    el("div", { class: "title" }, h.title || ""), el("p", { class: "text" }, text || ""));
}

function column(title, result) {
  return el("section", { class: "column", "aria-label": `${title} results` },
    el("h2", {}, `${title} `, el("span", { class: "muted" }, `${result.took_ms.toFixed(0)} ms`)),
    ...(result.hits.length ? result.hits.map(hitCard) : [el("p", { class: "muted" }, "no hits")]));
}

// The reader's answer (POST /answer), highlighted in its passage, with the other n-best answers.
async function runAnswer(q, k, modes) {
  const box = $("answer"), ticket = (state.asked = (state.asked || 0) + 1);
  const mode = modes.includes("hybrid") ? "hybrid" : modes[0];
  box.hidden = false;
  box.replaceChildren(el("p", { class: "muted" }, `reading the top ${k} (${mode})\u2026`));
  try {
    const a = await api("/answer", { q, k: Math.min(k, state.info.limits.max_read_k), mode, n_best: 5 });
    if (ticket !== state.asked) return;  // a newer question was asked meanwhile
    const others = [...new Set(a.n_best.map((s) => s.text))].filter((t) => t !== a.answer);
    box.replaceChildren(
      el("h2", {}, "Answer ", el("span", { class: "muted" }, `${mode}, top ${a.k} read, ${a.took_ms.toFixed(0)} ms`)),
      el("p", { class: "the-answer" }, a.answer),
      el("div", { class: "meta" }, `passage #${a.passage_rank + 1} \u00b7 `, passageLink(a.passage_id, "index"), ` \u00b7 ${a.title || ""} \u00b7 span ${a.span_score.toFixed(2)}, selection ${a.selection_score.toFixed(2)}`),
      el("p", { class: "text" }, highlighted(a.evidence, [{ start: a.start, end: a.end, kind: "answer" }])),
      others.length ? el("p", { class: "muted" }, `also: ${others.join(" | ")}`) : null);
  } catch (err) { if (ticket === state.asked) box.replaceChildren(el("p", {}, `Answer: ${err.message}`)); }
}

async function runSearch(e) {
  e && e.preventDefault();
  const q = $("q").value.trim();
  if (!q) return;
  const k = Math.max(1, Math.min(100, +$("k").value || 10));
  $("search-status").textContent = "searching\u2026";
  const modes = state.info ? state.info.modes : ["dense", "bm25", "hybrid"];
  if (state.info && state.info.reader) runAnswer(q, k, modes);
  try {
    const results = await Promise.all(modes.map((mode) => api("/search", { q, k, mode })));
    $("results").replaceChildren(...results.map((r) => column(r.mode, r)));
    $("search-status").textContent = `${modes.length} systems, top ${k}`;
    history.replaceState(null, "", `#search=${encodeURIComponent(q)}`);
  } catch (err) { $("search-status").textContent = err.message; }
}

function pairCard(p) {
  const neg = p.negative ? el("div", { class: "side negative" }, el("div", { class: "label" }, `Negative (${p.negative.kind || ""}) \u00b7 ${p.negative.title || ""} \u00b7 `, passageLink(p.negative.passage_id, "pairs")), (p.negative.text || "").slice(0, 300) + "\u2026") : null;
  const statement = p.answer && p.answer.statement ? el("p", { class: "reason" }, "Statement: ", el("q", {}, p.answer.statement)) : null;
  return el("article", { class: "pair" },
    el("h3", {}, `${p.method.toUpperCase()} \u00b7 ${p.query.title || ""} \u2192 ${p.positive.title || ""}`),
    el("p", { class: "reason" }, p.reason), statement,
    el("div", { class: "side" }, el("div", { class: "label" }, "Query \u00b7 ", passageLink(p.query.passage_id, "pairs")), el("div", {}, highlighted(p.query.text, p.query.spans))),
    el("div", { class: "side" }, el("div", { class: "label" }, `Positive \u00b7 ${p.positive.title || ""} \u00b7 `, passageLink(p.positive.passage_id, "pairs")), el("div", {}, highlighted(p.positive.text, p.positive.spans))),
    neg);
}

async function loadPairs(e) {
  e && e.preventDefault();
  const params = new URLSearchParams({ method: $("method").value, page: state.page, page_size: 5, q: $("pq").value, title: $("ptitle").value });
  try {
    const data = await api(`/pairs?${params}`);
    state.pages = data.pages;
    $("pair-list").replaceChildren(...(data.pairs.length ? data.pairs.map(pairCard) : [el("p", { class: "muted" }, "no pairs match")]));
    $("pageinfo").textContent = `page ${data.page} of ${data.pages} (${data.total.toLocaleString()} pairs)`;
  } catch (err) { $("pair-list").replaceChildren(el("p", {}, err.message)); }
  $("prev").disabled = state.page <= 1; $("next").disabled = state.page >= state.pages;
  const def = (state.defs || {})[$("method").value];
  $("method-def").textContent = def ? `${def.title}: ${def.definition}` : "";
}

// Grouped bar chart of stats.json's overlap_histogram (20 bins over [0, 1]), as shares of each method's pairs;
// drawn 360 units wide on a narrow screen, so that its text keeps its size when it shrinks to fit.
const narrow = window.matchMedia("(max-width: 600px)");
function histogram(stats) {
  const methods = Object.entries(stats.methods || {}).filter(([, s]) => s.overlap_histogram);
  if (!methods.length) return el("p", { class: "muted" }, "no overlap statistics");
  const W = narrow.matches ? 360 : 760, R = 16, B = 30, L = 20, T = 8 + methods.length * 16, H = T + 170, bins = methods[0][1].overlap_histogram.length;
  const colors = ["#1a56a8", "#e37400", "#1e8e3e", "#a142f4", "#c5221f"];
  const shares = methods.map(([, s]) => { const t = s.overlap_histogram.reduce((a, b) => a + b, 0) || 1; return s.overlap_histogram.map((v) => v / t); });
  const top = Math.max(...shares.flat(), 0.01);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`); svg.setAttribute("role", "img");
  const add = (tag, attrs, text) => { const n = document.createElementNS(ns, tag); for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v); if (text) n.textContent = text; svg.append(n); return n; };
  const bw = (W - L - R) / bins, w = bw / methods.length;
  shares.forEach((row, m) => row.forEach((v, i) => {
    const h = (v / top) * (H - B - T);
    add("rect", { x: L + i * bw + m * w, y: H - B - h, width: Math.max(w - 1, 1), height: h, fill: colors[m % colors.length] }).append(Object.assign(document.createElementNS(ns, "title"), { textContent: `${methods[m][0]} ${(i / bins).toFixed(2)}-${((i + 1) / bins).toFixed(2)}: ${(v * 100).toFixed(1)}%` }));
  }));
  add("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#888" });
  for (let t = 0; t <= 4; t++) add("text", { x: L + (t / 4) * (W - L - R), y: H - B + 18, "font-size": 14, "text-anchor": "middle" }, (t / 4).toFixed(2));
  methods.forEach(([name, s], m) => { add("rect", { x: L, y: 8 + m * 16, width: 11, height: 11, fill: colors[m % colors.length] }); add("text", { x: L + 16, y: 18 + m * 16, "font-size": 13 }, `${name}: ${s.overlap_pairs ?? s.pairs} pairs, mean ${s.mean_overlap ?? "-"}`); });
  const caption = el("figcaption", {}, `Query-positive word overlap (share of each method's pairs; top bar ${(top * 100).toFixed(0)}%)`);
  return el("figure", {}, caption, svg);
}

function drawHistogram() {
  if (state.stats) $("histogram").replaceChildren(histogram(state.stats));
}

async function initPairs() {
  if (!state.info || !state.info.pairs) { $("pair-list").replaceChildren(el("p", { class: "muted" }, "No pairs folder is served (start with --pairs PAIRS_DIR).")); return; }
  $("method").replaceChildren(...state.info.pairs.methods.map((m) => el("option", { value: m }, m)));
  try {
    state.stats = await api("/pairs/stats");
    state.defs = state.stats.definitions;
    drawHistogram();
  } catch (err) { $("histogram").textContent = err.message; }
  await loadPairs();
}

async function loadQueries() {
  const set = $("qset").value;
  $("qprev").disabled = $("qnext").disabled = true;  // until a page says there is somewhere to go
  if (!set) return;
  try {
    const data = await api(`/queries?set=${encodeURIComponent(set)}&page=${state.qpage}&page_size=20`);
    state.qpages = data.pages;
    $("judged-list").setAttribute("start", (data.page - 1) * 20 + 1);
    $("judged-list").replaceChildren(...data.queries.map((q) => el("li", {}, el("button", { type: "button", onclick: () => compare(q) }, `${q.id}: ${q.text || "(no text: start with --queries)"}`), el("span", { class: "muted" }, ` \u00b7 ${q.judged} relevant`))));
    $("qpageinfo").textContent = `page ${data.page} of ${data.pages}`;
    $("qprev").disabled = state.qpage <= 1; $("qnext").disabled = state.qpage >= state.qpages;
  } catch (err) { $("judged-status").textContent = err.message; }
}

async function compare(q) {
  if (!q.text) return;
  $("judged-status").textContent = "comparing\u2026";
  try {
    const data = await api("/compare", { q: q.text, k: 10, systems: [$("sysa").value, $("sysb").value], qrels: $("qset").value, query_id: q.id });
    $("compare").replaceChildren(...data.systems.map((s) => column(s.mode, s)));
    const found = data.systems.map((s) => `${s.mode}: ${s.hits.filter((h) => h.relevance > 0).length} of ${data.judged} relevant in the top ${data.k}`);
    $("judged-status").textContent = `query ${data.query_id}: ${q.text} \u2014 ${found.join("; ")}`;
    $("compare").scrollIntoView({ block: "nearest" });
  } catch (err) { $("judged-status").textContent = err.message; }
}

function show(view) {
  for (const v of ["search", "pairs", "judged"]) {
    $(`view-${v}`).hidden = v !== view;
    if (v === view) $(`tab-${v}`).setAttribute("aria-current", "page"); else $(`tab-${v}`).removeAttribute("aria-current");
  }
}

function route() {
  let hash;
  try { hash = decodeURIComponent(location.hash.slice(1)); } catch (err) {  // a hand-edited or cut-off address
    show("search");
    $("search-status").textContent = `The address after # is not valid percent-encoding (${err.message}): type the query instead.`;
    return;
  }
  if (hash.startsWith("search=")) { show("search"); $("q").value = hash.slice(7); runSearch(); }
  else if (hash === "pairs" || hash === "judged") show(hash);
  else show("search");
}

async function init() {
  // listeners first: the keyboard works while /info is still loading
  $("search-form").addEventListener("submit", runSearch);
  $("pairs-form").addEventListener("submit", (e) => { state.page = 1; loadPairs(e); });
  $("method").addEventListener("change", () => { state.page = 1; loadPairs(); });
  $("prev").addEventListener("click", () => { state.page = Math.max(1, state.page - 1); loadPairs(); });
  $("next").addEventListener("click", () => { state.page = Math.min(state.pages, state.page + 1); loadPairs(); });
  $("qset").addEventListener("change", () => { state.qpage = 1; loadQueries(); });
  $("qprev").addEventListener("click", () => { state.qpage = Math.max(1, state.qpage - 1); loadQueries(); });
  $("qnext").addEventListener("click", () => { state.qpage = Math.min(state.qpages, state.qpage + 1); loadQueries(); });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && !["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) { e.preventDefault(); show("search"); $("q").focus(); }
  });
  window.addEventListener("hashchange", route);
  narrow.addEventListener("change", drawHistogram);
  await loadInfo();
  route();
  initPairs();
  loadQueries();
}

async function loadInfo() {
  try {
    state.info = await api("/info");
    $("info").title = state.info.index;
    $("info").textContent = `${state.info.index.split(/[\\/]/).filter(Boolean).pop()} \u00b7 ${state.info.kind} \u00b7 ${state.info.model || "bm25"} \u00b7 ${state.info.passages.toLocaleString()} passages${state.info.reader ? " \u00b7 reader" : ""}`;
    const sets = Object.keys(state.info.sets.qrels);
    $("qset").replaceChildren(...sets.map((s) => el("option", { value: s }, s)));
    if (!sets.length) $("judged-status").textContent = "No judgments are loaded: serve a refined index (it records its own), or start with --qrels NAME=PATH --queries queries.jsonl.";
  } catch (err) { $("info").textContent = err.message; }
}

$("savekey").addEventListener("click", async () => { localStorage.setItem("pretriever-key", $("apikey").value); $("keybox").hidden = true; await loadInfo(); route(); initPairs(); loadQueries(); });
init();
