// The live view: one WebSocket to /ws/agui/, AG-UI events applied to local state.
// STATE_SNAPSHOT replaces the state, STATE_DELTA patches it (patch.js), ACTIVITY_* keep the
// interrupts' content. Every task change bumps its `version` by one: a jump means we
// missed something, so we ask for a fresh snapshot ({"type": "resync"}). A dropped socket
// reconnects with exponential backoff and starts again from a snapshot.
// The view is projected after each change commits, so it may lag behind the tasks: while it
// lags more than 2 s the server sends CUSTOM "taskdeck.lag" events ({seconds}; 0 once it
// caught up), and the status says so ("live view 3 s behind").

import { applyPatch, PatchError } from "./patch.js";

const TASKS = "/view/tasks/";
const PENDING = "/view/pendingInterrupts";

function taskIdOf(path) {
  if (!path || !path.startsWith(TASKS)) return null;
  const rest = path.slice(TASKS.length);
  const cut = rest.indexOf("/");
  return (cut === -1 ? rest : rest.slice(0, cut)).replace(/~1/g, "/").replace(/~0/g, "~");
}

export class LiveView {
  constructor(url) {
    this.url = url;
    this.state = { view: { tasks: {}, pendingInterrupts: {} } };
    this.activities = new Map();
    this.handlers = { snapshot: [], change: [], activity: [], status: [], counts: [] };
    this.attempt = 0;
    this.status = "connecting";
    this.ws = null;
    this.timer = null;
    this.hasSnapshot = false;
    this.lagSeconds = 0; // how far the view is behind the tasks, as the server last said
    // The counts over every task (the server's, agui.selectors.counts): the board's counts,
    // the Inbox badge and the tab title read these, never the rows a cut view holds.
    this.counts = null;
    this.focus = ""; // the states the board is filtered by: the server holds them first
    this.stats = { snapshots: 0, deltas: 0, resyncs: 0, reconnects: 0, statuses: [] };
  }

  on(name, fn) {
    this.handlers[name].push(fn);
    return this;
  }

  emit(name, ...args) {
    for (const fn of this.handlers[name]) {
      try {
        fn(...args);
      } catch (err) {
        console.error(`live ${name} handler failed`, err);
      }
    }
  }

  setStatus(status, detail = "") {
    this.status = status;
    this.stats.statuses.push(status);
    if (this.stats.statuses.length > 50) this.stats.statuses.shift();
    this.emit("status", status, detail);
  }

  // The status line's detail while live: how far the view lags, if it does.
  lagDetail() {
    return this.lagSeconds > 0 ? `live view ${Math.round(this.lagSeconds)} s behind` : "";
  }

  get tasks() {
    return this.state.view.tasks;
  }

  get pending() {
    return this.state.view.pendingInterrupts;
  }

  connect() {
    clearTimeout(this.timer);
    this.setStatus(this.attempt ? "reconnecting" : "connecting");
    let ws;
    try {
      ws = new WebSocket(this.focus ? `${this.url}?focus=${encodeURIComponent(this.focus)}` : this.url);
    } catch (err) {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    this.lagSeconds = 0; // a new socket hears the lag again within a second if it lasts
    ws.onmessage = (msg) => this.receive(msg.data);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.scheduleReconnect();
    };
    ws.onerror = () => ws.close();
  }

  scheduleReconnect() {
    this.attempt += 1;
    this.stats.reconnects += 1;
    const base = Math.min(15000, 500 * 2 ** Math.min(this.attempt - 1, 5));
    const delay = base / 2 + Math.random() * (base / 2);
    this.setStatus("offline", `retrying in ${Math.ceil(delay / 1000)} s`);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  resync(why) {
    this.stats.resyncs += 1;
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.setStatus("resyncing", why);
      this.ws.send(JSON.stringify({ type: "resync", focus: this.focus }));
    }
  }

  // The board's state filter: a view cut to its budget is asked again with these states
  // held first (after those needing a person), so the filter shows what was cut.
  setFocus(focus) {
    if ((focus || "") === this.focus) return;
    this.focus = focus || "";
    if (this.state.truncated) this.resync("filter changed");
  }

  receive(text) {
    let event;
    try {
      event = JSON.parse(text);
    } catch {
      return;
    }
    const t0 = performance.now();
    switch (event.type) {
      case "STATE_SNAPSHOT":
        this.state = event.snapshot || { view: {} };
        this.state.view ??= {};
        this.state.view.tasks ??= {};
        this.state.view.pendingInterrupts ??= {};
        this.hasSnapshot = true;
        this.attempt = 0;
        this.stats.snapshots += 1;
        this.setStatus("live", this.lagDetail());
        this.emit("snapshot", this.state, t0);
        break;
      case "CUSTOM":
        if (event.name === "taskdeck.counts") {
          this.counts = event.value || null;
          this.emit("counts", this.counts);
          return;
        }
        if (event.name !== "taskdeck.lag") return;
        this.lagSeconds = Number(event.value?.seconds) || 0;
        if (this.status === "live") this.setStatus("live", this.lagDetail());
        break;
      case "STATE_DELTA":
        this.stats.deltas += 1;
        this.applyDelta(event.delta || [], t0);
        break;
      case "ACTIVITY_SNAPSHOT":
        this.activities.set(event.messageId, event.content || {});
        this.emit("activity", event.messageId, event.content, event.activityType);
        break;
      case "ACTIVITY_DELTA": {
        const current = this.activities.get(event.messageId);
        if (!current) return;
        try {
          this.activities.set(event.messageId, applyPatch(current, event.patch || []));
        } catch (err) {
          return;
        }
        this.emit("activity", event.messageId, this.activities.get(event.messageId), event.activityType);
        break;
      }
      default:
        break;
    }
  }

  applyDelta(ops, t0) {
    if (!this.hasSnapshot) return;
    const touched = new Set();
    let pendingChanged = false;
    for (const op of ops) {
      const id = taskIdOf(op.path) ?? taskIdOf(op.from);
      if (id !== null) touched.add(id);
      if (op.path.startsWith(PENDING) || (op.from || "").startsWith(PENDING)) pendingChanged = true;
    }
    const before = new Map();
    for (const id of touched) before.set(id, this.tasks[id]?.version);
    try {
      this.state = applyPatch(this.state, ops);
    } catch (err) {
      if (err instanceof PatchError) {
        this.resync(err.message);
        return;
      }
      throw err;
    }
    let gap = false;
    for (const [id, old] of before) {
      const now = this.tasks[id]?.version;
      if (old !== undefined && now !== undefined && now > old + 1) gap = true;
    }
    this.emit("change", touched, pendingChanged, t0);
    if (gap) this.resync("missed a change");
  }
}

export function socketUrl(path = "/ws/agui/") {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}
