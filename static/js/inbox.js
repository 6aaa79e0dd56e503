// Approvals inbox: pending requests arrive and leave live (forms being filled in are kept
// as typed); keyboard: j/k move, a approve, r reject (then write why), / search.

import { coalesced, fetchFragment, trackEdits } from "./fragments.js";

export function start(live) {
  const lists = document.getElementById("inbox-lists");
  trackEdits(lists);
  let current = null;

  function items() {
    return [...document.querySelectorAll("#pending-list .inbox-item")];
  }

  function select(item, focus = true) {
    if (current) current.classList.remove("current");
    current = item;
    if (!item) return;
    item.classList.add("current");
    if (focus) {
      item.focus({ preventScroll: true });
      item.scrollIntoView({ block: "nearest" });
    }
  }

  function known() {
    return new Set(items().map((i) => i.dataset.interrupt));
  }

  const refresh = coalesced(async () => {
    const params = new URLSearchParams(location.search); // this page: its q and after
    params.set("fragment", "1");
    const doc = await fetchFragment(`/inbox?${params}`);
    const list = document.getElementById("pending-list");
    const byId = new Map(items().map((i) => [i.dataset.interrupt, i]));
    const next = [];
    for (const fresh of doc.querySelectorAll("#pending-list .inbox-item")) {
      const keep = byId.get(fresh.dataset.interrupt);
      next.push(keep || document.importNode(fresh, true));
    }
    list.replaceChildren(...next);
    for (const id of ["pending-count", "pending-shown", "pending-empty", "inbox-pager", "resolved-list"]) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (fresh && old) old.replaceWith(document.importNode(fresh, true));
    }
    window.taskdeck.localiseTimes(lists);
    if (current && !current.isConnected) {
      // Its request was answered or withdrawn elsewhere. Choose nothing in its place: the
      // next `a` must not approve a request the operator has not looked at.
      select(null);
      say("The request you had selected is no longer waiting; press j to choose another.");
    }
  }, "inbox refresh");

  const hint = document.getElementById("inbox-hint");
  function say(text) {
    if (hint) hint.textContent = text;
  }

  function pendingIds() {
    return new Set(Object.keys(live.pending));
  }
  function differs() {
    const a = pendingIds();
    const b = known();
    if (a.size !== b.size) return true;
    for (const id of a) if (!b.has(id)) return true;
    return false;
  }
  // Search as you type, like the board (issue 29: the inbox waited for Enter). The query
  // goes in the address bar (a reload or a link shows the same), from the first page.
  const search = document.getElementById("inbox-q");
  let typing = null;
  if (search) {
    search.form.addEventListener("submit", (e) => {
      e.preventDefault();
      clearTimeout(typing);
      searchNow();
    });
    search.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(searchNow, 250);
    });
  }
  function searchNow() {
    const q = search.value.trim();
    const params = new URLSearchParams();
    if (q) params.set("q", q);
    const want = params.toString() ? `?${params}` : location.pathname;
    if (want === location.search || (!q && !location.search)) return;
    history.replaceState(history.state, "", want);
    refresh();
  }

  live.on("snapshot", () => differs() && refresh());
  live.on("change", (ids, pendingChanged) => pendingChanged && refresh());

  // Keyboard
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t.closest && t.closest("input:not([type=radio]):not([type=checkbox]), textarea, select");
    if (e.key === "Escape" && typing) {
      t.blur();
      const item = t.closest(".inbox-item");
      if (item) select(item);
      return;
    }
    if (typing) return;
    const all = items();
    if (!all.length) return;
    const at = current ? all.indexOf(current) : -1;
    if (e.key === "j" || e.key === "k") {
      e.preventDefault();
      const step = e.key === "j" ? 1 : -1;
      select(all[Math.min(all.length - 1, Math.max(0, at + step))] || all[0]);
    } else if ((e.key === "a" || e.key === "r") && document.body.dataset.canOperate === "1") {
      // viewers may watch the inbox, not decide in it: no shortcut, no hint
      const decision = e.key === "a" ? "approve" : "reject";
      if (!current || !current.isConnected) {
        // Nothing chosen yet: choose the first request and say so, but decide nothing. An
        // approval is sent at once, so it must be for the request the operator is looking at.
        e.preventDefault();
        const first = all[0];
        select(first);
        const title = (first.querySelector("h3")?.textContent || "").trim() || "the first request";
        say(
          first.querySelector(`input[data-decision=${decision}]`)
            ? `Selected “${title}”. Press ${e.key} again to ${decision} it, or j/k to choose another.`
            : `Selected “${title}”: it is not an approval; answer it in its form.`,
        );
        return;
      }
      const item = current;
      const radio = item.querySelector(`input[data-decision=${decision}]`);
      if (!radio) return;
      e.preventDefault();
      say("");
      select(item, false);
      radio.checked = true;
      radio.closest("form").dataset.dirty = "1";
      if (e.key === "a") {
        radio.closest("form").requestSubmit();
      } else {
        const comment = radio.closest("fieldset").querySelector("[data-comment]");
        if (comment) comment.focus();
      }
    }
  });
  document.addEventListener("focusin", (e) => {
    const item = e.target.closest && e.target.closest("#pending-list .inbox-item");
    if (item && item !== current) select(item, false);
  });
  const firstError = document.querySelector(".inbox-item .has-error");
  if (firstError) select(firstError.closest(".inbox-item"));
}
