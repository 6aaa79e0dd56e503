// Demo launcher, guided interrupt flow: follow one approval task as it drafts, stops for a
// decision (the request appears here the moment it arrives) and carries on.

import { describe, STATE_LABELS } from "./describe.js";
import { fetchFragment } from "./fragments.js";

const ORDER = ["started", "working", "interrupt", "answered", "finished"];

export function start(live) {
  const box = document.getElementById("guided");
  const taskId = box?.dataset.task;
  if (!taskId) return;
  const steps = document.getElementById("guided-steps");
  const chip = document.getElementById("guided-chip");
  const line = document.getElementById("guided-line");
  const slot = document.getElementById("guided-item");
  const outcome = document.getElementById("guided-outcome");
  const progress = document.getElementById("guided-progress");
  let fetching = null;
  let answered = false;

  function stage(entry) {
    const s = entry.status;
    if (["completed", "failed", "canceled", "rejected"].includes(s)) return "finished";
    if (s === "input-required") return "interrupt";
    if (answered || (entry.lastInterruptId && s === "working")) return "answered";
    if (s === "working" || s === "submitted") return "working";
    return "working";
  }

  async function showItem(interruptId) {
    if (fetching === interruptId || slot.querySelector(`[data-interrupt="${CSS.escape(interruptId)}"]`)) return;
    fetching = interruptId;
    try {
      const next = `/demo?guided=${encodeURIComponent(taskId)}`;
      const doc = await fetchFragment(`/inbox/${encodeURIComponent(interruptId)}?next=${encodeURIComponent(next)}`);
      const item = doc.querySelector(".inbox-item");
      if (item && live.pending[interruptId]) {
        slot.replaceChildren(document.importNode(item, true));
        window.taskdeck.localiseTimes(slot);
        const first = slot.querySelector("input, textarea, select");
        if (first) first.focus({ preventScroll: true });
      }
    } finally {
      fetching = null;
    }
  }

  function render() {
    const entry = live.tasks[taskId];
    if (!entry) return;
    chip.dataset.state = entry.status;
    chip.textContent = STATE_LABELS[entry.status] || entry.status;
    line.textContent = describe(entry);
    const p = entry.summaries?.progress;
    progress.textContent = p ? `${p.done} of ${p.total}` : "";
    const now = stage(entry);
    if (now === "answered") answered = true;
    const at = ORDER.indexOf(now);
    for (const li of steps.querySelectorAll("li")) {
      const i = ORDER.indexOf(li.dataset.step);
      li.classList.toggle("done", i < at || (i === at && now === "finished"));
      li.classList.toggle("now", i === at && now !== "finished");
    }
    if (now === "finished") outcome.textContent = entry.statusText || STATE_LABELS[entry.status];
    const pending = Object.values(live.pending).find((p) => p.taskId === taskId);
    if (pending) showItem(pending.interruptId);
    else if (slot.firstElementChild) slot.replaceChildren();
  }
  live.on("snapshot", render);
  live.on("change", (ids, pendingChanged) => (ids.has(taskId) || pendingChanged) && render());
}
