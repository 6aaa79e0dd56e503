// Task detail: refresh the page's regions when this task changes (the live view reflects a
// newer task version than the page's data-version, which is the one the view had when the
// page was drawn: the view is projected after the change commits), count down the pause
// deadline. A refresh patches the regions in place (fragments.js morph), so an opened
// artifact or "Payloads as JSON" stays open, focus, a selection and scroll stay where the
// reader left them, and forms being typed in are kept as typed. A typed form carries what
// it answers (data-answers: the pause's handle, the request's id); when that ended under
// it, the form is kept, says so, and offers to move the text to the new form — it is never
// silently redrawn empty or pointed at another pause (issue 29).
// A refused action answers from its POST URL (/tasks/<id>/resume, …), which only takes
// POST: the refresh always fetches the task's own page (data-url), and the address bar is
// put back to it so a reload or a copied link shows the task, not a 405.

import { coalesced, fetchFragment, morph, trackEdits } from "./fragments.js";

export function start(live) {
  const root = document.getElementById("task-live");
  if (!root) return;
  const taskId = root.dataset.task;
  const url = root.dataset.url || `/tasks/${encodeURIComponent(taskId)}`;
  if (location.pathname !== url) history.replaceState(history.state, "", url + location.hash);
  let shown = Number(root.dataset.version);
  trackEdits(root);

  // Timeline filters (All / Messages / State changes / Decisions): kept while the page
  // refreshes its regions.
  let filter = "all";
  function applyFilter() {
    const section = document.getElementById("task-timeline");
    if (!section) return;
    let visible = 0;
    for (const li of section.querySelectorAll("li.tl")) {
      li.hidden = filter !== "all" && li.dataset.group !== filter;
      if (!li.hidden) visible += 1;
    }
    for (const b of section.querySelectorAll("[data-tl-filter]")) {
      b.setAttribute("aria-pressed", String(b.dataset.tlFilter === filter));
    }
    const none = section.querySelector(".tl-none");
    if (none) none.hidden = visible > 0;
  }
  root.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest("[data-tl-filter]");
    if (!b) return;
    filter = b.dataset.tlFilter;
    applyFilter();
  });

  // A typed form whose pause or request ended: kept beside the fresh region, said so. Its
  // note follows what the task does next (a new pause may come after a while of work).
  function sayStale(holder, twin) {
    const note = holder.querySelector(".stale-note");
    const waiting = Boolean(twin);
    if (note.dataset.waiting === String(waiting)) return;
    note.dataset.waiting = String(waiting);
    note.textContent = waiting
      ? "What this form answered has ended and a new one is waiting (its form is below). What you typed is kept here; sending it as it is will be refused."
      : "What this form answered has ended, so it cannot be sent any more. What you typed is kept here.";
    if (waiting) {
      const move = document.createElement("button");
      move.type = "button";
      move.className = "btn btn-sm";
      move.dataset.moveTo = holder.dataset.stale;
      move.textContent = "Use what I typed in the new form";
      note.append(" ", move);
    }
  }

  function keepStale(current, fresh) {
    for (const holder of current.querySelectorAll(".stale-holder")) {
      sayStale(holder, fresh.querySelector(`#${CSS.escape(holder.dataset.stale)}`));
    }
    for (const form of current.querySelectorAll("form[data-answers][data-dirty]")) {
      if (form.closest(".stale-holder")) continue; // kept already
      const twin = form.id ? fresh.querySelector(`#${CSS.escape(form.id)}`) : null;
      if (twin && twin.dataset.answers === form.dataset.answers) continue; // the same: kept as typed
      const holder = document.createElement("div");
      holder.className = "stale-holder";
      holder.dataset.local = "1"; // the refresh leaves it be
      holder.dataset.stale = form.id;
      const note = document.createElement("p");
      note.className = "stale-note";
      note.setAttribute("role", "alert");
      holder.append(note);
      sayStale(holder, twin);
      form.id = `${form.id}-stale`; // the fresh form takes the id
      form.removeAttribute("aria-labelledby");
      form.setAttribute("aria-label", "What you typed before (not sent)");
      for (const n of form.querySelectorAll("[id]")) n.id = `${n.id}-stale`;
      for (const l of form.querySelectorAll("label[for]")) l.htmlFor = `${l.htmlFor}-stale`;
      for (const n of form.querySelectorAll("[aria-describedby]")) {
        n.setAttribute("aria-describedby", n.getAttribute("aria-describedby").split(/\s+/).map((x) => `${x}-stale`).join(" "));
      }
      const anchor = form.closest("[data-region] > *") || form;
      anchor.before(holder);
      holder.append(form);
    }
  }

  // "Use what I typed in the new form": the kept values into the fresh form, by name
  // (never the handle or the CSRF token), then the kept copy goes.
  root.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest("[data-move-to]");
    if (!b) return;
    const target = document.getElementById(b.dataset.moveTo);
    const holder = b.closest(".stale-holder");
    const kept = holder?.querySelector("form");
    if (!target || !kept) return;
    for (const field of kept.elements) {
      if (!field.name || ["handle", "csrfmiddlewaretoken", "next"].includes(field.name) || field.type === "hidden") continue;
      const into = [...target.elements].filter((x) => x.name === field.name);
      if (field.type === "radio" || field.type === "checkbox") {
        for (const x of into) if (x.value === field.value) x.checked = field.checked;
      } else if (into[0]) into[0].value = field.value;
    }
    target.dataset.dirty = "1";
    holder.remove();
    const first = target.querySelector("input:not([type=hidden]), textarea, select");
    if (first) first.focus();
  });

  // The phone's actions bar: to the form, and for Approve/Reject the decision chosen
  // (nothing is sent from the bar: the form's own button sends).
  root.addEventListener("click", (e) => {
    const a = e.target.closest && e.target.closest("[data-bar]");
    if (!a) return;
    const form = document.querySelector(a.getAttribute("href"));
    if (!form) return;
    e.preventDefault();
    form.scrollIntoView({ block: "start" });
    const decision = a.dataset.bar;
    const radio = form.querySelector(`input[data-decision="${decision}"]`);
    if (radio) {
      radio.checked = true;
      form.dataset.dirty = "1";
    }
    const comment = decision === "reject" && form.querySelector("[data-comment]");
    const target = comment || (decision === "approve" ? form.querySelector("button[type=submit]") : form.querySelector("input:not([type=hidden]):not([type=radio]), textarea, select"));
    if (target) target.focus({ preventScroll: true });
  });

  const refresh = coalesced(async () => {
    const doc = await fetchFragment(`${url}?fragment=1`);
    const head = doc.getElementById("task-head");
    const version = Number(head?.dataset.version || 0);
    if (version < shown) return;
    shown = version;
    const kept = keptInView();
    for (const fresh of doc.querySelectorAll("[data-region]")) {
      const current = document.getElementById(fresh.id);
      if (!current) continue;
      keepStale(current, fresh);
      morph(current, fresh);
    }
    kept();
    root.dataset.version = String(shown);
    applyFilter();
    window.taskdeck.localiseTimes(root);
    window.taskdeck.tick();
  }, "refresh");

  // What the reader looks at stays where it is in the window: the element a third of
  // the way down it, moved back by however much the refresh moved it. The browser's own
  // scroll anchoring does this only sometimes (a phone's reader saw the timeline jump
  // 34 px when a line above it grew; a desktop's did not).
  function keptInView() {
    const seen = document.elementFromPoint(window.innerWidth / 2, window.innerHeight / 3);
    if (!seen || seen === document.documentElement || seen === document.body) return () => {};
    const top = seen.getBoundingClientRect().top;
    return () => {
      if (!seen.isConnected) return;
      const moved = seen.getBoundingClientRect().top - top;
      if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
    };
  }

  function wanted() {
    const entry = live.tasks[taskId];
    // the task version the entry reflects (entries projected before it was sent: version)
    return entry && (entry.taskVersion ?? entry.version) > shown;
  }
  live.on("snapshot", () => wanted() && refresh());
  live.on("change", (ids) => ids.has(taskId) && wanted() && refresh());
}
