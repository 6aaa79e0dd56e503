// Notice what waits (issue 15): the tab's title and icon carry the number of pending
// approvals, and — only when the operator turned them on, on the inbox page — a browser
// notification tells of each new approval request and each task that fails, a click on
// it opening that request or task. Works on every signed-in page (app.js starts it).

const KEY = "taskdeck.notify";
const BASE_TITLE = document.title;

export function wanted() {
  return localStorage.getItem(KEY) === "on" && "Notification" in window && Notification.permission === "granted";
}

// The inbox's switch: asks the browser's permission when turned on.
export function bindSwitch(box, note) {
  if (!box) return;
  const supported = "Notification" in window;
  box.disabled = !supported;
  box.checked = supported && wanted();
  const say = (text) => note && (note.textContent = text);
  if (!supported) say("This browser cannot show notifications.");
  else if (Notification.permission === "denied") say("Notifications are blocked for this site in the browser's settings.");
  box.addEventListener("change", async () => {
    if (!box.checked) {
      localStorage.setItem(KEY, "off");
      say("Notifications off.");
      return;
    }
    const answer = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
    if (answer === "granted") {
      localStorage.setItem(KEY, "on");
      say("You will be notified of new approval requests and failed tasks.");
    } else {
      box.checked = false;
      localStorage.setItem(KEY, "off");
      say("The browser refused: notifications stay off.");
    }
  });
}

function show(title, body, url, tag) {
  if (!wanted()) return;
  const n = new Notification(title, { body, tag });
  n.onclick = () => {
    window.focus();
    location.assign(url);
    n.close();
  };
}

export function start(live, pendingCount) {
  const icon = document.querySelector('link[rel="icon"]');
  let shown = -1;
  let knownPending = null; // ids seen so far; null until the first snapshot
  const statuses = new Map();

  function count() {
    const n = pendingCount ? pendingCount().n : Object.keys(live.pending).length;
    if (n === shown) return;
    shown = n;
    document.title = n ? `(${n}) ${BASE_TITLE}` : BASE_TITLE;
    if (icon) icon.href = `/favicon-${Math.min(n, 10)}.svg`;
  }

  function remember() {
    knownPending = new Set(Object.keys(live.pending));
    statuses.clear();
    for (const [id, t] of Object.entries(live.tasks)) statuses.set(id, t.status);
  }

  live.on("counts", count);
  live.on("snapshot", () => {
    count();
    remember(); // what a (re)connection finds is not news
  });
  live.on("change", (ids, pendingChanged) => {
    if (pendingChanged) {
      count();
      for (const [id, p] of Object.entries(live.pending)) {
        if (knownPending && !knownPending.has(id)) {
          const task = live.tasks[p.taskId];
          show(`Approval needed: ${p.title || "input requested"}`, task?.title || p.taskId,
               `/inbox#item-${encodeURIComponent(id)}`, `request-${id}`);
        }
      }
      knownPending = new Set(Object.keys(live.pending));
    }
    for (const id of ids) {
      const t = live.tasks[id];
      if (!t) {
        statuses.delete(id);
        continue;
      }
      if (t.status === "failed" && statuses.get(id) !== "failed") {
        show(`Task failed: ${t.title || id}`, t.statusText || "", `/tasks/${encodeURIComponent(id)}`, `failed-${id}`);
      }
      statuses.set(id, t.status);
    }
  });
}
