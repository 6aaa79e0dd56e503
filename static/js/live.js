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
    // Changes waiting for the next animation frame (see flush): the touched task ids,
    // whether the pending interrupts moved, and when each delta arrived.
    this.batch = null;
    // arrival -> the frame that shows it, and the change's commit (updatedAt) -> that
    // frame, per delta (bench/live_burst.py reads them; the newest 5,000 kept)
    this.frameDelays = { arrival: [], commit: [] };
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
        this.batch = null; // the snapshot shows everything the batch held
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
    this.queue(touched, pendingChanged, t0);
    if (gap) this.resync("missed a change");
  }

  // Deltas are applied to the state as they arrive (cheap, and the version check needs
  // it), but the pages hear of them once per animation frame, all the frame's task ids
  // together: a burst of 20 changes a second costs one redraw a frame, never a queue of
  // redraws each behind the last (issue 29: the delay grew to 17 s when every delta
  // re-laid out the board on its own).
  queue(touched, pendingChanged, t0) {
    if (!this.batch) {
      this.batch = { ids: new Set(), pending: false, t0, arrivals: [] };
      const flush = () => this.flush();
      // a hidden tab gets no frames: the timer flushes it (at most once a second there)
      this.batch.frame = requestAnimationFrame(flush);
      this.batch.timer = setTimeout(flush, 1000);
    }
    for (const id of touched) this.batch.ids.add(id);
    this.batch.pending ||= pendingChanged;
    this.batch.arrivals.push(t0);
  }

  flush() {
    const batch = this.batch;
    if (!batch) return;
    this.batch = null;
    cancelAnimationFrame(batch.frame);
    clearTimeout(batch.timer);
    this.emit("change", batch.ids, batch.pending, batch.t0);
    // the frame this callback runs in paints once it returns; a task queued now runs after
    const commits = [...batch.ids].map((id) => Date.parse(this.tasks[id]?.updatedAt || "")).filter(Number.isFinite);
    setTimeout(() => {
      const now = performance.now();
      const wall = Date.now();
      const d = this.frameDelays;
      for (const t of batch.arrivals) d.arrival.push(now - t);
      for (const t of commits) d.commit.push(wall - t);
      for (const list of [d.arrival, d.commit]) if (list.length > 5000) list.splice(0, list.length - 5000);
    }, 0);
  }
}

export function socketUrl(path = "/ws/agui/") {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}
