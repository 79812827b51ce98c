// The soak bench's virtual clients and their ledger.
//
// Each client runs sequentially: REST reads, MCP reads, and writes through REST or MCP at random.
// Writes touch entities the client owns alone (its projects, its tag names on shared
// applications, its env keys on shared applications), so the last acknowledged write of each
// entity is well defined; the applications' tag lists are shared by every client, which is where
// a read-then-write of the whole list loses other clients' updates. Every written value is unique
// (a name or value never written twice), so finding it later proves that very write happened.
//
// After a write whose outcome is not "ok", the entity is "pending": before the client writes it
// again (and at the end) it reads the entity back and checks what it finds against what the
// outcome allows: after 503 or a 4xx only the state before the write; after unknown/500 the state
// before or after it. Finding the attempted (unique) value after a 503 means the 503 wrote.
import { setTimeout as sleep } from 'node:timers/promises';

const pick = (xs) => xs[Math.floor(Math.random() * xs.length)];
const arrayOf = (json) => (Array.isArray(json) ? json : json && typeof json === 'object' ? (Object.values(json).find(Array.isArray) ?? []) : []);

export class Ledger {
  constructor() {
    /** uuid → { uuid, owner, live, name, pending } */
    this.projects = new Map();
    /** Names of project creates answered 503/4xx (must not exist) and with an unknown outcome (may). */
    this.forbiddenProjectNames = new Set();
    this.maybeProjectNames = new Set();
    /** `${app}|${name}` → { app, name, owner, present, tagUuid, pending } */
    this.tags = new Map();
    /** `${app}|${key}` → { app, key, owner, present, value, uuid, pending } */
    this.envs = new Map();
    this.anomalies = [];
    /** Acknowledged writes by kind; non-ok writes checked by outcome. */
    this.acked = {};
    this.checked = {};
    /** Things worth a figure that break no promise (e.g. a tag record made anew under a new uuid). */
    this.observed = {};
  }
  observe(what) {
    this.observed[what] = (this.observed[what] ?? 0) + 1;
  }
  ack(kind) {
    this.acked[kind] = (this.acked[kind] ?? 0) + 1;
  }
  anomaly(category, detail) {
    this.anomalies.push({ category, detail });
  }
}

/** The state an entity is in, as one comparable string. */
const projectState = (p) => (p.live ? `name=${p.name}` : 'deleted');
const tagState = (t) => (t.present ? 'present' : 'absent');
const envState = (e) => (e.present ? `value=${e.value}` : 'absent');

export class Workload {
  constructor({ cluster, ledger, apps, clients, think = 0, log = () => undefined }) {
    Object.assign(this, { cluster, ledger, apps, clientCount: clients, think, log });
    this.stopped = false;
    this.seq = 0;
    this.run = `${Date.now().toString(36)}`;
  }

  unique(prefix) {
    return `${prefix}-${this.run}-${(this.seq++).toString(36)}`;
  }

  async start() {
    this.loops = Array.from({ length: this.clientCount }, (_, c) => this.#client(c));
  }

  async stop() {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  async #client(c) {
    const session = this.cluster.session(c % 2 ? 'legacy' : 'modern');
    const me = { c, session };
    try {
      while (!this.stopped) {
        const r = Math.random();
        let res;
        if (r < 0.3) res = await this.#restRead();
        else if (r < 0.5) res = await this.#mcpRead(session);
        else {
          const w = Math.random();
          res = w < 1 / 3 ? await this.#projectWrite(me) : w < 2 / 3 ? await this.#tagWrite(me) : await this.#envWrite(me);
        }
        if (res?.outcome === 'notsent' || res?.outcome === '503') await sleep(100);
        else if (this.think) await sleep(this.think);
      }
    } catch (err) {
      this.ledger.anomaly('bench error', `client ${c}: ${err?.stack ?? err}`);
    } finally {
      await session.close();
    }
  }

  #restRead() {
    const app = pick(this.apps);
    return this.cluster.rest('GET', pick(['/api/v1/teams/current', '/api/v1/projects', `/api/v1/applications/${app}`, `/api/v1/applications/${app}/tags`]));
  }

  #mcpRead(session) {
    const app = pick(this.apps);
    const [name, args] = pick([
      ['get_current_team', {}],
      ['list_projects', {}],
      ['get_application', { uuid: app }],
    ]);
    return this.cluster.mcp(session, name, args, 'read');
  }

  /** One write through REST or MCP (at random). */
  #write(me, rest, tool) {
    return Math.random() < 0.5 ? this.cluster.rest(rest[0], rest[1], rest[2]) : this.cluster.mcp(me.session, tool[0], tool[1]);
  }

  // ---- projects ------------------------------------------------------------------------------

  async #projectWrite(me) {
    const L = this.ledger;
    const mine = [...L.projects.values()].filter((p) => p.owner === me.c && p.live);
    if (mine.length < 3) {
      const name = this.unique(`soak-c${me.c}`);
      const r = await this.#write(me, ['POST', '/api/v1/projects', { name }], ['create_project', { name }]);
      if (r.outcome === 'ok') {
        L.ack('project create');
        L.projects.set(r.json.uuid, { uuid: r.json.uuid, owner: me.c, live: true, name, pending: null });
      } else if (r.outcome === '503' || r.outcome === '4xx') L.forbiddenProjectNames.add(name);
      else if (r.outcome !== 'notsent') L.maybeProjectNames.add(name);
      return r;
    }
    const p = pick(mine);
    if (p.pending) return this.resolveProject(p);
    if (Math.random() < 0.6) {
      const name = this.unique(`soak-c${me.c}`);
      const r = await this.#write(me, ['PATCH', `/api/v1/projects/${p.uuid}`, { name }], ['update_project', { uuid: p.uuid, name }]);
      this.#after(r, p, 'project rename', { ...p, name }, () => (p.name = name));
      return r;
    }
    const r = await this.#write(me, ['DELETE', `/api/v1/projects/${p.uuid}`], ['delete_project', { uuid: p.uuid }]);
    this.#after(r, p, 'project delete', { ...p, live: false }, () => (p.live = false));
    return r;
  }

  async resolveProject(p) {
    const r = await this.#readUntil(`/api/v1/projects/${p.uuid}`, [200, 404]);
    const found = r.status === 404 ? { live: false } : { live: true, name: r.json.name };
    this.#judge(p, projectState, found, p.pending.op === 'project rename');
    Object.assign(p, found);
    return r;
  }

  // ---- tags of shared applications -------------------------------------------------------------

  async #tagWrite(me) {
    const L = this.ledger;
    const app = pick(this.apps);
    const pendingOne = [...L.tags.values()].find((t) => t.owner === me.c && t.app === app && t.pending);
    if (pendingOne) return this.resolveTags(app, [pendingOne]);
    const mine = [...L.tags.values()].filter((t) => t.owner === me.c && t.app === app && t.present);
    if (mine.length < 2 && (mine.length === 0 || Math.random() < 0.5)) {
      const name = this.unique(`c${me.c}`).toLowerCase();
      const t = { app, name, owner: me.c, present: false, tagUuid: null, pending: null };
      L.tags.set(`${app}|${name}`, t);
      const r = await this.#write(me, ['POST', `/api/v1/applications/${app}/tags`, { tag_name: name }], ['add_application_tags', { uuid: app, tag_name: name }]);
      this.#after(r, t, 'tag add', { ...t, present: true }, () => {
        t.present = true;
        t.tagUuid = arrayOf(r.json).find((x) => x.name === name)?.uuid ?? null;
      });
      return r;
    }
    const t = pick(mine);
    if (!t.tagUuid) return this.resolveTags(app, [t]);
    const r = await this.#write(me, ['DELETE', `/api/v1/applications/${app}/tags/${t.tagUuid}`], ['remove_application_tag', { uuid: app, tag_uuid: t.tagUuid }]);
    this.#after(r, t, 'tag remove', { ...t, present: false }, () => Object.assign(t, { present: false, removed: true }));
    return r;
  }

  async resolveTags(app, entities) {
    const r = await this.#readUntil(`/api/v1/applications/${app}/tags`, [200]);
    const have = new Map(arrayOf(r.json).map((x) => [x.name, x.uuid]));
    for (const t of entities) {
      const found = { present: have.has(t.name), tagUuid: have.get(t.name) ?? t.tagUuid };
      if (found.present && t.tagUuid && found.tagUuid !== t.tagUuid) this.ledger.observe("a tag's record came back under a new uuid (the name stayed on the application)");
      if (t.pending) this.#judge(t, tagState, found, t.pending.op === 'tag add');
      else if (t.present && !found.present) this.ledger.anomaly('acknowledged tag add lost (seen during the run)', `${app} ${t.name}`);
      Object.assign(t, found);
    }
    return r;
  }

  // ---- env variables of shared applications ----------------------------------------------------

  async #envWrite(me) {
    const L = this.ledger;
    const app = pick(this.apps);
    const key = `SOAK_C${me.c}_${Math.floor(Math.random() * 2)}`;
    let e = L.envs.get(`${app}|${key}`);
    if (!e) L.envs.set(`${app}|${key}`, (e = { app, key, owner: me.c, present: false, value: null, uuid: null, pending: null }));
    if (e.pending) return this.resolveEnvs(app, [e]);
    const value = this.unique('v');
    if (!e.present) {
      const r = await this.#write(me, ['POST', `/api/v1/applications/${app}/envs`, { key, value }], ['create_application_env', { uuid: app, key, value }]);
      this.#after(r, e, 'env create', { ...e, present: true, value }, () => Object.assign(e, { present: true, value, uuid: r.json.uuid }));
      return r;
    }
    if (Math.random() < 0.7 || !e.uuid) {
      const r = await this.#write(me, ['PATCH', `/api/v1/applications/${app}/envs`, { key, value }], ['update_application_env', { uuid: app, key, value }]);
      this.#after(r, e, 'env update', { ...e, value }, () => (e.value = value));
      return r;
    }
    const r = await this.#write(me, ['DELETE', `/api/v1/applications/${app}/envs/${e.uuid}`], ['delete_application_env', { uuid: app, env_uuid: e.uuid }]);
    this.#after(r, e, 'env delete', { ...e, present: false }, () => Object.assign(e, { present: false, value: null, uuid: null }));
    return r;
  }

  async resolveEnvs(app, entities) {
    const r = await this.#readUntil(`/api/v1/applications/${app}/envs`, [200]);
    const have = new Map(
      arrayOf(r.json)
        .filter((x) => !x.is_preview)
        .map((x) => [x.key, x]),
    );
    for (const e of entities) {
      const x = have.get(e.key);
      const found = x ? { present: true, value: x.value, uuid: x.uuid } : { present: false, value: null, uuid: null };
      if (e.pending) this.#judge(e, envState, found, e.pending.op !== 'env delete');
      Object.assign(e, found);
    }
    return r;
  }

  // ---- the ledger's bookkeeping ----------------------------------------------------------------

  /** After a write: acknowledged → apply; refused → nothing happened; anything else → pending. */
  #after(r, entity, op, applied, apply) {
    if (r.outcome === 'ok') {
      this.ledger.ack(op);
      apply();
    } else if (r.outcome !== 'notsent') {
      entity.pending = { op, outcome: r.outcome, status: r.status, prev: { ...entity, pending: null }, applied: { ...applied, pending: null }, detail: r.error ?? r.json?.message };
    }
  }

  /**
   * Compares what was read back with what the pending write's outcome allows, and records any
   * difference. `unique`: the write put a value never written before, so finding it proves it.
   */
  #judge(entity, stateOf, found, unique) {
    const pend = entity.pending;
    entity.pending = null;
    const L = this.ledger;
    L.checked[`${pend.op} ${pend.outcome}`] = (L.checked[`${pend.op} ${pend.outcome}`] ?? 0) + 1;
    const got = stateOf({ ...entity, ...found });
    const prev = stateOf(pend.prev);
    const applied = stateOf(pend.applied);
    const mayHaveWritten = pend.outcome === 'unknown' || pend.outcome === '500';
    // A refusal of a write the ledger expected to succeed, with the entity as the ledger says: no
    // promise broken (nothing was written), but a wrong answer worth a figure.
    if (got === prev && pend.outcome === '4xx') L.observe(`${pend.op} answered ${pend.status} although the entity was as the ledger holds it`);
    if (got === prev || (mayHaveWritten && got === applied)) return;
    const what = `${pend.op} → ${pend.outcome}${pend.status ? ` (${pend.status})` : ''}${pend.detail ? ` "${String(pend.detail).slice(0, 80)}"` : ''}: before ${prev}, attempted ${applied}, found ${got}`;
    if (got === applied && unique) L.anomaly(`a ${pend.outcome} wrote (${pend.op})`, what);
    // A 404 on a remove or delete: it was gone already, so an acknowledged write before was lost.
    else if (got === applied && pend.outcome === '4xx') L.anomaly(`acknowledged state lost before a ${pend.op} (answered ${pend.status})`, what);
    else if (got === applied) L.anomaly(`${pend.op} found done after ${pend.outcome} (the ${pend.outcome} wrote, or an earlier acknowledged write was lost)`, what);
    else L.anomaly(`acknowledged state lost before a ${pend.op}`, what);
  }

  /** A REST GET retried (through outages) until it answers one of `statuses`. */
  async #readUntil(path, statuses, deadlineMs = 120_000) {
    const end = Date.now() + deadlineMs;
    for (;;) {
      const r = await this.cluster.rest('GET', path, undefined, 'check');
      if (statuses.includes(r.status)) return r;
      if (Date.now() > end) throw new Error(`GET ${path} did not answer ${statuses.join('/')} within ${deadlineMs} ms (last: ${r.outcome} ${r.status} ${r.error ?? ''})`);
      await sleep(250);
    }
  }

  /**
   * After the load: resolves every pending entity, then reads every entity back and compares it
   * with its last acknowledged state. Returns the figures of the check.
   */
  async verify() {
    const L = this.ledger;
    for (const p of L.projects.values()) if (p.pending) await this.resolveProject(p);
    for (const app of this.apps) {
      await this.resolveTags(
        app,
        [...L.tags.values()].filter((t) => t.app === app && t.pending),
      );
      await this.resolveEnvs(
        app,
        [...L.envs.values()].filter((e) => e.app === app && e.pending),
      );
    }
    const mismatch = (category, detail) => L.anomaly(`final: ${category}`, detail);
    let checked = 0;
    for (const p of L.projects.values()) {
      const r = await this.#readUntil(`/api/v1/projects/${p.uuid}`, [200, 404]);
      checked++;
      if (p.live && r.status === 404) mismatch('acknowledged project lost', p.uuid);
      else if (p.live && r.json.name !== p.name) mismatch('acknowledged project rename lost', `${p.uuid}: expected ${p.name}, found ${r.json.name}`);
      else if (!p.live && r.status === 200) mismatch('acknowledged project delete undone', p.uuid);
    }
    // Every project that exists must be one the ledger knows (or one whose create has no answer).
    const names = new Set();
    for (let page = 1; ; page++) {
      const r = await this.#readUntil(`/api/v1/projects?page=${page}&per_page=100`, [200]);
      const items = arrayOf(r.json);
      for (const x of items) names.add(x.name);
      if (items.length < 100) break;
    }
    for (const n of L.forbiddenProjectNames) if (names.has(n)) mismatch('a project create answered 503/4xx exists', n);
    for (const app of this.apps) {
      const tags = new Set(arrayOf((await this.#readUntil(`/api/v1/applications/${app}/tags`, [200])).json).map((x) => x.name));
      for (const t of L.tags.values()) {
        if (t.app !== app) continue;
        checked++;
        if (t.present && !tags.has(t.name)) mismatch('acknowledged tag add lost', `${app} ${t.name}`);
        if (!t.present && tags.has(t.name)) mismatch(t.removed ? 'acknowledged tag remove undone' : 'a tag whose add was not acknowledged (and read back absent) is present', `${app} ${t.name}`);
      }
      const envs = new Map(
        arrayOf((await this.#readUntil(`/api/v1/applications/${app}/envs`, [200])).json)
          .filter((x) => !x.is_preview)
          .map((x) => [x.key, x.value]),
      );
      for (const e of L.envs.values()) {
        if (e.app !== app) continue;
        checked++;
        if (e.present && !envs.has(e.key)) mismatch('acknowledged env create lost', `${app} ${e.key}`);
        else if (e.present && envs.get(e.key) !== e.value) mismatch('acknowledged env update lost', `${app} ${e.key}: expected ${e.value}, found ${envs.get(e.key)}`);
        else if (!e.present && envs.has(e.key)) mismatch('acknowledged env delete undone', `${app} ${e.key}`);
      }
    }
    return { checked, projectsSeen: names.size };
  }
}
