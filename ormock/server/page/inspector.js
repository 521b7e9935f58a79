// The ormock inspector: the journal pushed live (GET journal/stream, Server-Sent Events), and
// one exchange at a time (GET journal/{id}). Read-only: the page never changes the server.
"use strict";

(function () {
  const root = location.pathname.replace(/_ormock\/.*$/, "_ormock/");
  const api = (path) => root + path;
  const entries = new Map(); // id -> summary
  const live = new Map(); // id -> events received while the stream runs
  let picked = null;
  let detail = null;
  let refetch = null;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "left") node.style.left = value; // CSSOM: allowed by style-src 'self'

      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const $ = (id) => document.getElementById(id);
  const json = (value) => JSON.stringify(value, null, 2);
  const statusClass = (e) => (e.finished_at === null && !e.error && e.status < 400 ? "pending"
    : "s" + String(e.status || 0)[0]);
  const statusText = (e) => (e.finished_at === null && !e.error && e.status < 400 ? "running"
    : String(e.status || "-"));

  function passes(e) {
    const ns = $("f-namespace").value;
    if (ns !== "*" && e.namespace !== ns) return false;
    const status = $("f-status").value;
    if (status === "pending" && statusText(e) !== "running") return false;
    if (status && status !== "pending" && String(e.status)[0] !== status) return false;
    const path = $("f-path").value.trim();
    if (path && !e.path.includes(path)) return false;
    if ($("f-fault").checked && !(e.faults && e.faults.length)) return false;
    return true;
  }

  function shownPath(e) {
    // a create request's journal path holds its namespace, a replayed one's does not
    const head = e.namespace ? `/${e.namespace}/` : "/";
    return e.path.startsWith(head) ? e.path : head.slice(0, -1) + e.path;
  }

  function row(e) {
    const count = e.finished_at === null && live.has(e.id) ? live.get(e.id).length : e.events.length;
    const answered = e.answered_by || {};
    const by = answered.kind === "scenario" ? `${answered.scenario} #${answered.step}`
      : answered.kind === "cassette" ? `cassette #${answered.interaction}`
        : answered.kind === "recorded" ? "recorded" : answered.kind;
    return el("li", { "data-id": e.id, class: e.id === picked ? "picked" : null,
      onclick: () => pick(e.id) },
    el("span", { class: "badge " + statusClass(e), text: statusText(e) }),
    el("span", { class: "path", text: `${e.method} ${shownPath(e)}` }),
    el("span", {}, e.faults.length ? el("span", { class: "badge fault", text: "fault" }) : null),
    el("span", { class: "meta", text: `${e.id} · ${by} · ${count} events · ${e.ended}` +
      (e.namespace ? ` · ns ${e.namespace}` : "") }));
  }

  function renderList() {
    const list = $("entries");
    const shown = [...entries.values()].filter(passes).reverse();
    list.replaceChildren(...shown.map(row));
    $("count").textContent = `(${shown.length}/${entries.size})`;
    $("empty").hidden = entries.size > 0;
    const names = new Set([...entries.values()].map((e) => e.namespace));
    const select = $("f-namespace");
    for (const name of names) {
      if (![...select.options].some((o) => o.value === name)) {
        select.append(el("option", { value: name, text: name || "(default)" }));
      }
    }
  }

  async function getJSON(path) {
    const answer = await fetch(api(path), { headers: { accept: "application/json" } });
    if (!answer.ok) throw new Error(`${path}: HTTP ${answer.status}`);
    return answer.json();
  }

  async function pick(id) {
    picked = id;
    renderList();
    const e = entries.get(id);
    if (e && e.finished_at === null) {
      detail = null;
      renderDetail(Object.assign({}, e, { timeline: liveTimeline(id), struck: [], findings: [],
        running: true }));
      return;
    }
    try {
      detail = await getJSON("journal/" + encodeURIComponent(id));
      if (picked === id) renderDetail(detail);
    } catch (error) {
      $("detail").replaceChildren(el("p", { class: "hint", text: String(error) }));
    }
    refreshScenarios(e ? e.namespace : "");
  }

  function liveTimeline(id) {
    return (live.get(id) || []).map((r, index) => Object.assign({ index }, r));
  }

  function lanesOf(timeline) {
    const lanes = new Map([["response", []]]);
    for (const r of timeline) {
      let name = "response";
      if (r.output_index !== undefined && r.output_index !== null) {
        name = `item ${r.output_index}`;
        if (r.content_index !== undefined && r.content_index !== null) {
          name += ` · part ${r.content_index}`;
        }
      }
      if (!lanes.has(name)) lanes.set(name, []);
      lanes.get(name).push(r);
    }
    return lanes;
  }

  function dotClass(r, flagged) {
    const type = r.type || "";
    let kind = "dot";
    if (type.includes(".delta")) kind += " delta";
    if (type === "error" || type.endsWith(".failed") || type === "(not JSON)") kind += " err";
    else if (type.endsWith(".done") || type.endsWith(".completed")) kind += " done";
    if (!type.startsWith("response.") && type !== "error" && !type.startsWith("(") && type !== "[DONE]") {
      kind += " vendor";
    }
    if (flagged.has(r.index)) kind += " flagged";
    return kind;
  }

  function drawLanes(d, flagged) {
    const timeline = d.timeline;
    const last = Math.max(timeline.length - 1, 1);
    const x = (index) => `${(100 * index) / last}%`;
    const box = el("div", { class: "lanes", id: "lanes" });
    for (const [name, rows] of lanesOf(timeline)) {
      const track = el("div", { class: "track" });
      for (const r of rows) {
        track.append(el("button", { class: dotClass(r, flagged), left: x(r.index),
          title: `#${r.index} ${r.type} seq ${r.sequence_number ?? "-"} at ${r.offset_ms ?? "-"} ms`,
          onclick: () => openRow(r.index) }));
      }
      if (name === "response") {
        for (const s of d.struck || []) {
          if (s.index === null) continue;
          track.append(el("div", { class: "marker", left: x(Math.min(s.index, last)) },
            el("span", { text: `⚡ ${s.fault}` })));
        }
      }
      box.append(el("div", { class: "lane" }, el("span", { class: "name", text: name }), track));
    }
    const end = timeline.length ? timeline[timeline.length - 1].offset_ms : 0;
    box.append(el("div", { class: "axis" }, el("span", { text: "0 ms" }),
      el("span", { text: `${timeline.length} events` }), el("span", { text: `${end ?? 0} ms` })));
    return box;
  }

  function openRow(index) {
    const tr = document.querySelector(`tr.ev[data-index="${index}"]`);
    if (tr) { toggle(tr); tr.scrollIntoView({ block: "nearest" }); }
  }

  function toggle(tr) {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains("payload")) { next.remove(); tr.classList.remove("open"); return; }
    const r = tr.rowData;
    tr.classList.add("open");
    tr.after(el("tr", { class: "payload" }, el("td", { colspan: 7 },
      el("pre", { text: r.data !== undefined ? json(r.data) : (r.raw || "(payload not kept)") }))));
  }

  function timelineTable(d, byIndex, flagged) {
    const struckAt = new Map((d.struck || []).map((s) => [s.index, s]));
    const body = el("tbody", { id: "timeline" });
    for (const r of d.timeline) {
      const notes = (byIndex.get(r.index) || []).map((f) =>
        el("span", { class: "finding", text: `⚠ ${f.rule}: ${f.message}` }));
      const struck = struckAt.get(r.index);
      const tr = el("tr", { class: "ev" + (struck ? " struck" : "") + (flagged.has(r.index) ? " flagged" : ""),
        "data-index": r.index, onclick: (event) => toggle(event.currentTarget) },
      el("td", { class: "num", text: r.index }),
      el("td", { class: "num", text: r.offset_ms ?? "" }),
      el("td", {}, r.type ?? "", struck ? el("span", { class: "badge fault", text: `⚡ ${struck.fault}: ${struck.what}`, title: where(struck) }) : null, notes),
      el("td", { class: "num", text: r.sequence_number ?? "" }),
      el("td", { class: "num", text: r.output_index ?? "" }),
      el("td", { class: "num", text: r.content_index ?? "" }),
      el("td", { text: r.item_id ?? "" }));
      tr.rowData = r;
      body.append(tr);
    }
    const after = (d.struck || []).filter((s) => s.index !== null && s.index >= d.timeline.length);
    for (const s of after) {
      body.append(el("tr", { class: "struck" }, el("td", { colspan: 7 },
        el("span", { class: "badge fault", text: `⚡ ${s.fault}`, title: where(s) }), ` ${s.what}`)));
    }
    return el("table", { class: "timeline" }, el("thead", {}, el("tr", {},
      ["#", "ms", "type", "seq", "output", "part", "item"].map((h) => el("th", { text: h })))), body);
  }

  // where a fault struck, as the server recorded it: event, planned frame, byte offset
  function where(s) {
    const parts = [s.index === null ? "the whole answer" : `event ${s.index}`];
    if (s.frame !== null && s.frame !== undefined) parts.push(`frame ${s.frame}`);
    if (s.byte !== null && s.byte !== undefined) parts.push(`byte ${s.byte}`);
    return parts.join(", ");
  }

  function card(label, value, cls) {
    return el("div", { class: "card" }, el("b", { text: label }), el("span", { class: cls || "", text: value }));
  }

  function renderDetail(d) {
    const answered = d.answered_by || {};
    const by = answered.kind === "scenario" ? `scenario ${answered.scenario}, step ${answered.step}`
      : answered.kind === "cassette" ? `cassette ${answered.cassette}, interaction ${answered.interaction}`
        : answered.kind === "recorded" ? `the upstream, recorded to ${answered.cassette}`
        : answered.kind === "error" ? `nothing (${answered.code || "error"})` : answered.kind;
    const byIndex = new Map();
    for (const f of d.findings || []) {
      if (!byIndex.has(f.index)) byIndex.set(f.index, []);
      byIndex.get(f.index).push(f);
    }
    const flagged = new Set((d.findings || []).map((f) => f.index));
    const parts = [
      el("h2", { class: "title", text: `${d.id} · ${d.method} ${d.path}` }),
      el("div", { class: "cards" },
        card("status", d.running ? "running" : String(d.status), "badge " + statusClass(d)),
        card("answered by", by),
        card("ended", d.ended),
        card("events", String(d.timeline.length)),
        card("faults", d.faults.length ? d.faults.join(", ") : "none", d.faults.length ? "badge fault" : ""),
        d.namespace ? card("namespace", d.namespace) : null),
    ];
    if (!d.running) {
      parts.push(el("div", { class: "actions" },
        el("a", { href: api(`journal/${d.id}/export?as=scenario`), download: `${d.id}.scenario.yaml`, text: "export as scenario" }),
        el("a", { href: api(`journal/${d.id}/export?as=cassette`), download: `${d.id}.cassette.yaml`, text: "export as cassette" }),
        el("button", { type: "button", id: "copy-curl", onclick: copyCurl, text: "copy as curl" })));
    }
    if (d.error) {
      parts.push(el("h3", { text: d.error.code === "no_match" || /closest/i.test(d.error.message || "")
        ? "Matched nothing: the near misses" : "Error" }), el("pre", { id: "error", text: d.error.message || json(d.error) }));
    }
    if (d.timeline.length) {
      parts.push(el("h3", { text: "Timeline" }), drawLanes(d, flagged), el("p"), timelineTable(d, byIndex, flagged));
    } else if (d.running) {
      parts.push(el("h3", { text: "Timeline" }), el("p", { class: "hint", text: "waiting for the first event…" }),
        timelineTable(d, byIndex, flagged));
    }
    if ((d.findings || []).length) {
      parts.push(el("h3", { text: "Checker findings" }), el("ul", { class: "findings", id: "findings" },
        d.findings.map((f) => el("li", {}, el("span", { class: "badge s4", text: f.rule }),
          ` ${f.index === null ? "stream" : "event " + f.index}: ${f.message}`))));
    }
    if (d.response_body !== undefined) {
      parts.push(el("h3", { text: "Response body" }), el("pre", { text: typeof d.response_body === "string" ? d.response_body : json(d.response_body) }));
    }
    parts.push(el("h3", { text: "Request headers" }), el("pre", { id: "req-headers", text: json(d.headers) }),
      el("h3", { text: "Request body" }), el("pre", { id: "req-body", text: json(d.body) }));
    if (d.response_headers) parts.push(el("h3", { text: "Response headers" }), el("pre", { text: json(d.response_headers) }));
    if (d.curl) parts.push(el("h3", { text: "curl" }), el("pre", { id: "curl", text: d.curl }));
    $("detail").replaceChildren(...parts);
  }

  function copyCurl() {
    if (detail && detail.curl && navigator.clipboard) navigator.clipboard.writeText(detail.curl).catch(() => {});
    const button = $("copy-curl");
    if (button) button.textContent = "copied";
  }

  async function refreshScenarios(namespace) {
    try {
      const prefix = namespace && !root.includes(`/${namespace}/_ormock/`) ? `/${namespace}/_ormock/` : root;
      const answer = await fetch(prefix + "scenarios");
      const data = answer.ok ? await answer.json() : { data: [] };
      const box = $("scenarios");
      if (!data.data.length) { box.replaceChildren("none loaded"); return; }
      box.replaceChildren(...data.data.map((s) => el("div", {}, el("b", { text: s.name }),
        el("ol", { class: "steps", start: 0 }, s.steps.map((step) => el("li", { class: step.used ? "used" : "unused",
          text: `${step.name || "step " + step.index}: used ${step.used} of ${step.times}` }))))));
    } catch (error) { /* the panel keeps what it showed */ }
  }

  async function refreshNamespaces() {
    if (root !== "/_ormock/") return;
    try {
      const data = await getJSON("namespaces");
      $("namespaces").replaceChildren(data.data.length ? `${data.data.length} open (limit ${data.limit}): ${data.data.join(", ")}` : "none opened");
    } catch (error) { /* as before */ }
  }

  function onEntry(e) {
    const known = entries.has(e.id);
    entries.set(e.id, e);
    if (e.finished_at !== null) live.delete(e.id);
    renderList();
    if (!known && $("f-follow").checked && passes(e)) {
      clearTimeout(refetch);
      refetch = setTimeout(() => pick(e.id), 30); // the newest of a burst (the first load)
    } else if (e.id === picked) {
      clearTimeout(refetch);
      refetch = setTimeout(() => pick(e.id), 50);
    }
    if (!known) refreshNamespaces();
  }

  function onEvents(message) {
    const rows = live.get(message.id) || [];
    for (const event of message.events) {
      rows.push({ type: event.type, sequence_number: event.sequence_number, output_index: event.output_index,
        content_index: event.content_index ?? event.summary_index, item_id: event.item_id,
        offset_ms: message.offset_ms, data: event });
    }
    live.set(message.id, rows);
    const e = entries.get(message.id);
    if (message.id === picked && e && e.finished_at === null) {
      renderDetail(Object.assign({}, e, { timeline: liveTimeline(message.id), struck: [], findings: [], running: true }));
    }
    renderList();
  }

  function connect() {
    const source = new EventSource(api("journal/stream"));
    source.addEventListener("open", () => { $("live").textContent = "live"; $("live").className = "live on"; });
    source.addEventListener("error", () => { $("live").textContent = "reconnecting"; $("live").className = "live off"; });
    source.addEventListener("entry", (m) => onEntry(JSON.parse(m.data)));
    source.addEventListener("events", (m) => onEvents(JSON.parse(m.data)));
    source.addEventListener("resync", () => {
      source.close(); entries.clear(); live.clear(); renderList(); setTimeout(connect, 200);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("base-url").textContent = location.origin + root.replace(/_ormock\/$/, "") + "v1";
    for (const id of ["f-namespace", "f-status", "f-fault"]) $(id).addEventListener("change", renderList);
    $("f-path").addEventListener("input", renderList);
    $("filters").addEventListener("submit", (event) => event.preventDefault());
    renderList();
    refreshScenarios("");
    refreshNamespaces();
    connect();
  });
})();
