// RFC 6902 JSON Patch, applied in place (add, remove, replace, move, copy, test) on objects
// and arrays, with RFC 6901 pointers. Returns the (possibly new) document; throws
// PatchError when an op cannot apply, so the caller can resync from a fresh snapshot.

export class PatchError extends Error {}

function unescape(token) {
  return token.replace(/~1/g, "/").replace(/~0/g, "~");
}

export function parsePointer(pointer) {
  if (pointer === "") return [];
  if (pointer[0] !== "/") throw new PatchError(`bad pointer ${pointer}`);
  return pointer.slice(1).split("/").map(unescape);
}

function isContainer(v) {
  return v !== null && typeof v === "object";
}

function arrayIndex(arr, token, forAdd) {
  if (forAdd && token === "-") return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new PatchError(`bad array index ${token}`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new PatchError(`index ${i} out of range`);
  return i;
}

function parentOf(doc, tokens) {
  let node = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i];
    if (Array.isArray(node)) node = node[arrayIndex(node, t, false)];
    else if (isContainer(node) && Object.prototype.hasOwnProperty.call(node, t)) node = node[t];
    else throw new PatchError(`path not found at ${t}`);
  }
  if (!isContainer(node)) throw new PatchError("parent is not a container");
  return node;
}

export function getAt(doc, pointer) {
  let node = doc;
  for (const t of parsePointer(pointer)) {
    if (Array.isArray(node)) node = node[arrayIndex(node, t, false)];
    else if (isContainer(node) && Object.prototype.hasOwnProperty.call(node, t)) node = node[t];
    else throw new PatchError(`path not found: ${pointer}`);
  }
  return node;
}

function clone(v) {
  return isContainer(v) ? structuredClone(v) : v;
}

function deepEqual(a, b) {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}

function add(doc, tokens, value) {
  if (tokens.length === 0) return value;
  const parent = parentOf(doc, tokens);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true), 0, value);
  else parent[last] = value;
  return doc;
}

function remove(doc, tokens) {
  if (tokens.length === 0) throw new PatchError("cannot remove the root");
  const parent = parentOf(doc, tokens);
  const last = tokens[tokens.length - 1];
  let old;
  if (Array.isArray(parent)) {
    old = parent.splice(arrayIndex(parent, last, false), 1)[0];
  } else {
    if (!Object.prototype.hasOwnProperty.call(parent, last)) throw new PatchError(`no ${last} to remove`);
    old = parent[last];
    delete parent[last];
  }
  return [doc, old];
}

export function applyOp(doc, op) {
  const tokens = parsePointer(op.path);
  switch (op.op) {
    case "add":
      return add(doc, tokens, clone(op.value));
    case "remove":
      return remove(doc, tokens)[0];
    case "replace": {
      if (tokens.length === 0) return clone(op.value);
      getAt(doc, op.path); // must exist
      const parent = parentOf(doc, tokens);
      const last = tokens[tokens.length - 1];
      if (Array.isArray(parent)) parent[arrayIndex(parent, last, false)] = clone(op.value);
      else parent[last] = clone(op.value);
      return doc;
    }
    case "move": {
      if (op.path === op.from) return doc;
      if (op.path.startsWith(op.from + "/")) throw new PatchError("cannot move into itself");
      const [d, value] = remove(doc, parsePointer(op.from));
      return add(d, tokens, value);
    }
    case "copy":
      return add(doc, tokens, clone(getAt(doc, op.from)));
    case "test":
      if (!deepEqual(getAt(doc, op.path), op.value)) throw new PatchError(`test failed at ${op.path}`);
      return doc;
    default:
      throw new PatchError(`unknown op ${op.op}`);
  }
}

export function applyPatch(doc, ops) {
  for (const op of ops) doc = applyOp(doc, op);
  return doc;
}
