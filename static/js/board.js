// The task board: every task, live. Rows are keyed by task id and patched in place, so a
// delta costs work for the tasks it touches (plus recounting), not a re-render of the board.
// The default order is stable (the tasks that need a person on top, then newest task
// first): at 20 changes a second rows must not jump under the operator's pointer; a
// changed row flashes instead (a row moves only when its task comes to need a person, or
// stops needing one). Operators may sort by
// state, title or last update instead (then rows move: they asked for it). Only one page
// of rows is in the document (PAGE_SIZE, or ?size= 10 to 500); sort, page and size live
// in the URL with the filters.

import { ago, boardState, chipLabel, clock, describe, el, exact, matches, originLabels, outcome, searchMatch, STATES } from "./describe.js";

export const PAGE_SIZE = 200;
const DEFAULT_SORT = { key: "created", dir: "desc" };
const NEEDS_PERSON = new Set(["input-required", "auth-required", "paused-by-client"]);
const FIRST_DIR = { created: "desc", updated: "desc", title: "asc", state: "asc" };

const metrics = { firstRender: null, snapshotRender: [], deltas: [], paints: [] };
window.__boardMetrics = metrics;

export function start(live) {
  const tbody = document.getElementById("board-rows");
  const empty = document.getElementById("board-empty");
  const summary = document.getElementById("board-summary");
  const filterForm = document.getElementById("filters");
  const bulkForm = document.getElementById("bulk-form");
  const selectAll = document.getElementById("select-all");
  const canOperate = document.body.dataset.canOperate === "1";
  const rows = new Map(); // taskId -> {tr, cells, entry}
  const selected = new Set();
  let filters = readFilters();
  live.focus = filters.state; // the first snapshot holds the filtered states first
  let order = readOrder();
  const pager = document.getElementById("board-pager");
  const range = document.getElementById("board-range");

  // Phones: the filters and the bulk bar fold behind one control (issue 29: with them
  // open, the first screen held no task); its note says which filters are on. At desktop
  // widths the fold stays open and its control is hidden (CSS).
  const tools = document.getElementById("board-tools");
  const toolsNote = document.getElementById("tools-note");
  const narrow = matchMedia("(max-width: 700px)");
  function fold() {
    if (tools) tools.open = !narrow.matches;
  }
  fold();
  narrow.addEventListener("change", fold);
  function noteTools() {
    if (!toolsNote) return;
    const on = Object.entries(filters).filter(([, v]) => v).map(([k, v]) => `${k}: ${v}`);
    const parts = [];
    if (on.length) parts.push(`on: ${on.join(", ")}`);
    if (selected.size) parts.push(`${selected.size} selected`);
    const text = parts.length ? `(${parts.join("; ")})` : "";
    if (toolsNote.textContent !== text) toolsNote.textContent = text;
  }

  function readFilters() {
    const q = new URLSearchParams(location.search);
    return { state: q.get("state") || "", skill: q.get("skill") || "", context: q.get("context") || "", q: q.get("q") || "", origin: q.get("origin") || "" };
  }

  function readOrder() {
    const q = new URLSearchParams(location.search);
    const key = FIRST_DIR[q.get("sort")] ? q.get("sort") : DEFAULT_SORT.key;
    const dir = q.get("dir") === "asc" || q.get("dir") === "desc" ? q.get("dir") : FIRST_DIR[key];
    const page = Math.max(1, parseInt(q.get("page") || "1", 10) || 1);
    const size = Math.min(500, Math.max(10, parseInt(q.get("size") || "", 10) || PAGE_SIZE));
    return { key, dir, page, size };
  }

  // Filters, sort and page in the address bar (defaults left out), so a link or a reload
  // shows the same board.
  function writeUrl() {
    const q = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    if (order.key !== DEFAULT_SORT.key || order.dir !== FIRST_DIR[order.key]) {
      q.set("sort", order.key);
      q.set("dir", order.dir);
    }
    if (order.page > 1) q.set("page", String(order.page));
    if (order.size !== PAGE_SIZE) q.set("size", String(order.size));
    history.replaceState(null, "", q.toString() ? `?${q}` : location.pathname);
  }

  const RANK = Object.fromEntries(STATES.map((s, i) => [s, i]));
  const cmp = (a, b) => ((a || "") < (b || "") ? -1 : (a || "") > (b || "") ? 1 : 0);
  function compare(a, b) {
    const x = a.entry;
    const y = b.entry;
    // The default order puts the tasks that need a person (an answer, a sign-in, an
    // operator's pause) on top, whatever their age: the board's first page always shows
    // them, as the live view always holds them (agui/view.py, NEEDS_PERSON).
    if (order.key === DEFAULT_SORT.key && order.dir === DEFAULT_SORT.dir) {
      const p = (NEEDS_PERSON.has(y.status) ? 1 : 0) - (NEEDS_PERSON.has(x.status) ? 1 : 0);
      if (p) return p;
    }
    let c; // ascending on the key, then turned for "desc"
    if (order.key === "updated") c = cmp(x.updatedAt, y.updatedAt);
    else if (order.key === "title") c = (x.title || x.taskId).localeCompare(y.title || y.taskId, undefined, { sensitivity: "base" });
    else if (order.key === "state") c = (RANK[x.status] ?? 99) - (RANK[y.status] ?? 99);
    else c = cmp(x.createdAt, y.createdAt);
    if (order.dir === "desc") c = -c;
    // ties: newest task first, then by id, so the order never flickers between renders
    return c || -cmp(x.createdAt, y.createdAt) || -cmp(x.taskId, y.taskId);
  }

  // Put the current page's rows in the document, in order; nothing moves when neither the
  // page's members nor their order changed (the usual delta: a row changed in place).
  // order.page is the page the operator asked for (and the URL keeps): fewer rows for a
  // moment show the last page there is, but do not forget it. A snapshot after a reconnect
  // comes in parts (the tasks needing a person that did not fit follow it), and clamping
  // order.page there sent the operator back to page 1 for good.
  let current = 1; // the page shown: order.page, or the last page there is
  function layout() {
    const shown = [...rows.values()].filter((r) => r.show).sort(compare);
    const pages = Math.max(1, Math.ceil(shown.length / order.size));
    current = Math.min(order.page, pages);
    const start = (current - 1) * order.size;
    const page = shown.slice(start, start + order.size);
    // Move only the rows that moved: a new task at the top is one insert and one removal,
    // not 200 rows taken out and put back (each frame of a burst re-laid out the board).
    const want = new Set(page.map((r) => r.tr));
    for (const node of [...tbody.children]) if (!want.has(node)) node.remove();
    let at = tbody.firstElementChild;
    for (const r of page) {
      if (r.tr === at) at = at.nextElementSibling;
      else tbody.insertBefore(r.tr, at);
    }
    pager.hidden = shown.length <= order.size;
    range.textContent = shown.length ? `Tasks ${start + 1}–${start + page.length} of ${shown.length} · page ${current} of ${pages}` : "";
    pager.querySelector('[data-page="prev"]').disabled = current <= 1;
    pager.querySelector('[data-page="next"]').disabled = current >= pages;
    for (const head of document.querySelectorAll("[data-sort-col]")) {
      const col = head.dataset.sortCol;
      const on = col === order.key || (col === "created" && order.key === "title");
      head.setAttribute("aria-sort", on ? (order.dir === "asc" ? "ascending" : "descending") : "none");
    }
    const alt = document.querySelector('.sort-alt[data-sort="title"]');
    if (alt) alt.setAttribute("aria-pressed", String(order.key === "title"));
    const pick = document.getElementById("f-sort");
    const value = `${order.key}:${order.dir}`;
    if (pick && [...pick.options].some((o) => o.value === value)) pick.value = value;
    return page.length;
  }

  // Where a task came in by: a calm tag beside its id, from the view entry (never changes).
  function placeOrigin(row, entry) {
    const o = originLabels(entry.origin);
    if (!o || row.cells.origin) return;
    row.cells.origin = el(
      "span",
      { class: "origin", "data-origin": entry.origin.door, title: o.spoken },
      el("span", { class: "sr-only" }, o.spoken),
      el("span", { class: "origin-text", "aria-hidden": "true" }, o.short),
    );
    row.cells.sub.append(row.cells.origin);
  }

  function makeRow(entry) {
    const id = entry.taskId;
    const tr = el("div", { class: "row", role: "row", dataset: { task: id } });
    const cells = {};
    if (canOperate) {
      const cb = el("input", { type: "checkbox", name: "ids", value: id, form: "bulk-form", "aria-label": "Select task" });
      cb.addEventListener("change", () => {
        if (cb.checked) selected.add(id);
        else selected.delete(id);
        updateBulk();
      });
      cells.cb = cb;
      tr.append(el("div", { class: "col-check", role: "cell" }, cb));
    }
    cells.chip = el("span", { class: "chip" });
    tr.append(el("div", { class: "col-state", role: "cell" }, cells.chip));
    cells.link = el("a", { class: "task-link", href: `/tasks/${encodeURIComponent(id)}` });
    cells.ids = el("span", { class: "task-ids" });
    cells.sub = el("span", { class: "task-sub" }, cells.ids);
    tr.append(el("div", { class: "col-task", role: "cell" }, cells.link, cells.sub));
    cells.line = el("span", { class: "line" });
    cells.hit = el("span", { class: "hit", hidden: true });
    tr.append(el("div", { class: "col-line", role: "cell" }, cells.line, cells.hit));
    cells.bar = el("span", { class: "mini-bar" });
    cells.barWrap = el("span", { class: "mini", "aria-hidden": "true" }, cells.bar);
    cells.pct = el("span", { class: "mini-text" });
    tr.append(el("div", { class: "col-progress", role: "cell" }, cells.barWrap, cells.pct));
    cells.time = el("time");
    cells.age = el("span", { class: "age", dataset: { sep: "" } });
    tr.append(el("div", { class: "col-time", role: "cell" }, cells.time, cells.age));
    const row = { tr, cells, entry: null, status: null, updatedAt: null };
    placeOrigin(row, entry);
    fillRow(row, entry);
    return row;
  }

  function fillRow(row, entry) {
    // Patches change entries in place: compare with what this row last drew, not with
    // the entry object (it is the same object).
    const c = row.cells;
    row.entry = entry;
    const label = chipLabel(entry);
    if (row.status !== entry.status || row.label !== label) {
      row.status = entry.status;
      row.label = label;
      c.chip.dataset.state = entry.status;
      const extra = outcome(entry);
      if (extra) c.chip.dataset.outcome = extra;
      else delete c.chip.dataset.outcome;
      c.chip.textContent = label;
      c.chip.title = extra ? `${entry.status} (${extra})` : entry.status;
      row.tr.dataset.state = entry.status;
    }
    const title = entry.title || entry.taskId;
    if (c.link.textContent !== title) c.link.textContent = title;
    const sub = `${entry.skill || "—"} · ${entry.taskId.slice(0, 8)}`;
    if (c.ids.textContent !== sub) c.ids.textContent = sub;
    const line = describe(entry);
    if (c.line.textContent !== line) {
      c.line.textContent = line;
      c.line.title = line;
    }
    const p = entry.summaries?.progress;
    const pct = p && p.total ? Math.round((100 * p.done) / p.total) : null;
    c.barWrap.hidden = pct === null;
    c.bar.style.width = pct === null ? "0" : `${pct}%`;
    c.bar.dataset.state = entry.status;
    c.pct.textContent = p ? `${p.done}/${p.total}` : "";
    row.updatedAt = entry.updatedAt;
    c.time.dateTime = entry.updatedAt || "";
    c.time.textContent = clock(entry.updatedAt);
    c.time.title = exact(entry.updatedAt);
    c.age.dataset.since = entry.updatedAt || "";
    c.age.textContent = ago(entry.updatedAt);
    applyVisibility(row);
  }

  function applyVisibility(row) {
    const show = matches(row.entry, filters);
    row.show = show;
    const hit = show && filters.q ? searchMatch(row.entry, filters.q) : "";
    const why = hit ? `matched in ${hit}` : "";
    if (row.cells.hit.textContent !== why) row.cells.hit.textContent = why;
    row.cells.hit.hidden = !why;
    if (row.cells.cb) {
      row.cells.cb.disabled = !show;
      if (!show && row.cells.cb.checked) {
        row.cells.cb.checked = false;
        selected.delete(row.entry.taskId);
      }
    }
  }

  // The counts say how many tasks there are in each state over every task (the server's,
  // live.counts: agui.selectors.counts), not how many rows this board holds: a view cut to
  // its budget still reads "4 Needs input" when the inbox lists 4. Before the first counts
  // arrive (an old server), the held rows are counted.
  function recount() {
    const held = Object.fromEntries(STATES.map((s) => [s, 0]));
    let shown = 0;
    let total = 0;
    for (const row of rows.values()) {
      total += 1;
      const state = boardState(row.entry); // "Completed · rejected" counts as rejected
      held[state] = (held[state] || 0) + 1;
      if (row.show) shown += 1;
    }
    const server = live.counts;
    // The server counts A2A states; the board shows a task that completed after an
    // operator rejected its approval as Rejected (boardState): those it holds move from
    // Completed to Rejected here, so a count and the rows under it agree.
    let declined = 0;
    for (const row of rows.values()) {
      if (row.entry.status === "completed" && boardState(row.entry) === "rejected") declined += 1;
    }
    const serverCount = (s) => {
      const n = server.states?.[s] || 0;
      if (s === "rejected") return n + declined;
      if (s === "completed") return Math.max(0, n - declined);
      return n;
    };
    for (const node of document.querySelectorAll("[data-count]")) {
      const s = node.dataset.count;
      const here = s === "" ? total : held[s] || 0;
      const n = server ? (s === "" ? server.total : serverCount(s)) : here;
      const text = n.toLocaleString("en");
      if (node.textContent !== text) node.textContent = text;
      const box = node.closest(".count");
      box.classList.toggle("zero", n === 0);
      box.title = n === here ? "" : `${text} in all; ${here.toLocaleString("en")} on this board`;
    }
    for (const a of document.querySelectorAll(".count")) {
      a.setAttribute("aria-current", a.dataset.state === filters.state ? "true" : "false");
    }
    empty.hidden = shown !== 0 || total === 0;
    const f = Object.entries(filters).filter(([, v]) => v);
    summary.hidden = false;
    const all = server ? server.total : total;
    summary.textContent =
      `${shown.toLocaleString("en")} of ${total.toLocaleString("en")} task${total === 1 ? "" : "s"} shown` +
      (all > total ? ` (${all.toLocaleString("en")} in all)` : "") +
      (f.length ? ` (filtered by ${f.map(([k, v]) => `${k}: ${v}`).join(", ")})` : "");
    // "all N matching": N is what this board holds; when the view is cut the server's
    // preview counts every task the filter matches (dashboard/bulkops.py), and says so
    const matching = document.getElementById("bulk-matching");
    if (matching) matching.textContent = shown.toLocaleString("en");
    const matchingNote = document.getElementById("bulk-matching-note");
    if (matchingNote) matchingNote.hidden = !live.state.truncated;
    outside(held, server);
    return shown;
  }

  // What is not on the board, and how to reach it: open tasks a view cut to its budget
  // left out, per state, each with a link that holds that state first (live.setFocus);
  // finished tasks past the live view are named only (their pages keep them).
  const OUTSIDE_WORDS = { submitted: "queued", working: "working", "paused-by-agent": "parked by agents", "input-required": "needing input", "auth-required": "needing sign-in", "paused-by-client": "paused by operators" };
  const FINISHED_STATES = ["completed", "failed", "canceled", "rejected"];
  function outside(held, server) {
    const note = document.getElementById("board-truncated");
    const cut = live.state.truncated;
    if (!server) {
      note.hidden = !cut;
      if (cut) note.textContent = `Showing the ${cut.shown} tasks that matter most of the ${cut.total} in the live view.`;
      return;
    }
    const parts = [];
    for (const [s, words] of Object.entries(OUTSIDE_WORDS)) {
      const n = (server.states?.[s] || 0) - (held[s] || 0);
      if (n > 0) parts.push([s, n, words]);
    }
    const finished = FINISHED_STATES.reduce((sum, s) => sum + Math.max(0, (server.states?.[s] || 0) - (held[s] || 0)), 0);
    const key = JSON.stringify([parts, finished, filters.state]);
    if (note.dataset.key === key) return;
    note.dataset.key = key;
    note.replaceChildren();
    note.hidden = parts.length === 0 && finished === 0;
    if (note.hidden) return;
    if (parts.length) {
      note.append("Not on this board: ");
      parts.forEach(([s, n, words], i) => {
        if (i) note.append(" · ");
        note.append(`${n.toLocaleString("en")} more ${words}`);
        if (filters.state !== s) {
          note.append(" — ");
          const a = el("a", { href: `?state=${encodeURIComponent(s)}`, dataset: { outsideState: s } }, "list them");
          a.addEventListener("click", (e) => {
            e.preventDefault();
            document.getElementById("f-state").value = s;
            setFilters();
          });
          note.append(a);
        }
      });
      note.append(". Tasks that need a person are always here; search or a state filter reaches the rest.");
    }
    if (finished) {
      if (parts.length) note.append(" ");
      note.append(`${finished.toLocaleString("en")} finished task${finished === 1 ? " has" : "s have"} left the live view (each keeps its page).`);
    }
  }

  function updateBulk() {
    noteTools();
    const n = document.getElementById("bulk-selected");
    if (n) n.textContent = `${selected.size} selected`;
    if (selectAll) {
      const visible = [...tbody.children].map((tr) => rows.get(tr.dataset.task)).filter(Boolean);
      selectAll.checked = visible.length > 0 && visible.every((r) => r.cells.cb.checked);
    }
  }


  const calm = matchMedia("(prefers-reduced-motion: reduce)");
  // The flash fades an overlay's opacity (the row's ::after, coloured --flash in CSS): the
  // compositor runs it. Fading the row's background colour repainted every flashing row
  // on every frame, and at 20 new tasks a second that held the main thread (bench/
  // live_burst.py: frames 300 ms apart instead of 16).
  function flash(tr) {
    if (calm.matches || !tr.isConnected) return;
    tr.animate([{ opacity: 1 }, { opacity: 0 }], { duration: 1200, easing: "ease-out", pseudoElement: "::after" });
  }

  live.on("snapshot", (state, t0) => {
    const keep = new Set(selected);
    rows.clear();
    selected.clear();
    for (const entry of Object.values(state.view.tasks)) {
      const row = makeRow(entry);
      rows.set(entry.taskId, row);
      if (keep.has(entry.taskId) && row.cells.cb && row.show) {
        row.cells.cb.checked = true;
        selected.add(entry.taskId);
      }
    }
    layout();
    recount();
    updateBulk();
    const done = performance.now();
    metrics.snapshotRender.push(done - t0);
    if (metrics.firstRender === null) metrics.firstRender = done;
    document.body.dataset.boardReady = "1";
  });

  live.on("counts", () => recount());

  const flashes = new Set();
  live.on("change", (ids, pendingChanged, t0) => {
    const begun = performance.now();
    for (const id of ids) {
      const entry = live.tasks[id];
      const row = rows.get(id);
      if (!entry) {
        if (row) {
          row.tr.remove();
          rows.delete(id);
          selected.delete(id);
        }
        continue;
      }
      if (row) {
        fillRow(row, entry);
        flashes.add(row.tr);
      } else {
        const fresh = makeRow(entry);
        rows.set(id, fresh);
        flashes.add(fresh.tr);
      }
    }
    layout();
    recount();
    if (flashes.size) {
      // live.js calls this in an animation frame: the flashes start in this one
      for (const tr of flashes) flash(tr);
      flashes.clear();
    }
    const done = performance.now();
    metrics.deltas.push(done - begun); // this frame's redraw (JS time)
    requestAnimationFrame(() => setTimeout(() => metrics.paints.push(performance.now() - t0), 0));
  });

  // Filters live in the URL: change one and the board, the counts and the bulk form follow.
  function setFilters() {
    const data = new FormData(filterForm);
    filters = {
      state: data.get("state") || "",
      skill: data.get("skill") || "",
      context: (data.get("context") || "").trim(),
      q: (data.get("q") || "").trim(),
      origin: data.get("origin") || "",
    };
    order.page = 1; // a new filter starts from its first page
    writeUrl();
    live.setFocus(filters.state); // a cut view is asked again with these states first
    if (bulkForm) for (const k of Object.keys(filters)) bulkForm.elements[k].value = filters[k];
    for (const row of rows.values()) applyVisibility(row);
    layout();
    recount();
    updateBulk();
  }
  // the sort picker (the column headers do the same; on phones they are hidden)
  const sortPick = document.getElementById("f-sort");
  const notSort = (handler) => (e) => e.target !== sortPick && handler();
  sortPick.addEventListener("change", () => {
    const [key, dir] = sortPick.value.split(":");
    order = { ...order, key, dir, page: 1 };
    writeUrl();
    layout();
    updateBulk();
  });
  filterForm.addEventListener("input", notSort(setFilters));
  filterForm.addEventListener("change", notSort(setFilters));
  filterForm.addEventListener("submit", (e) => {
    e.preventDefault();
    setFilters();
  });
  document.getElementById("f-clear").addEventListener("click", (e) => {
    e.preventDefault();
    filterForm.reset();
    for (const input of filterForm.querySelectorAll("input")) input.value = "";
    for (const s of filterForm.querySelectorAll("select")) s.value = "";
    setFilters();
  });
  for (const a of document.querySelectorAll(".count")) {
    a.addEventListener("click", (e) => {
      e.preventDefault();
      document.getElementById("f-state").value = a.dataset.state;
      setFilters();
    });
  }
  for (const button of document.querySelectorAll("button.sort")) {
    button.addEventListener("click", () => {
      const key = button.dataset.sort;
      order = key === order.key
        ? { ...order, dir: order.dir === "asc" ? "desc" : "asc", page: 1 }
        : { ...order, key, dir: FIRST_DIR[key], page: 1 };
      writeUrl();
      layout();
      updateBulk();
    });
  }
  pager.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest("[data-page]");
    if (!b || b.disabled) return;
    order.page = current + (b.dataset.page === "next" ? 1 : -1);
    writeUrl();
    layout();
    updateBulk();
    document.getElementById("board-summary").scrollIntoView({ block: "nearest" });
  });
  if (selectAll) {
    selectAll.addEventListener("change", () => {
      for (const tr of tbody.children) {
        const row = rows.get(tr.dataset.task);
        if (!row) continue;
        row.cells.cb.checked = selectAll.checked;
        if (selectAll.checked) selected.add(row.entry.taskId);
        else selected.delete(row.entry.taskId);
      }
      updateBulk();
    });
  }
}
