// The wats dashboard: reads the node's read-only views (api/v1/...) every
// 2 s and its metrics' history (api/history) every 5 s, and draws them.
// Every path is relative to the page's, /TOKEN/: each request carries the
// token. Every string from the node or its peers is set as text, never as
// HTML, in an element that isolates its direction.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c));
  return e;
}

const units = ["B", "KiB", "MiB", "GiB", "TiB"];
function bytes(n) {
  if (n == null) return "–";
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n.toFixed(0) : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
}
const rate = (n) => bytes(n) + "/s";
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
function duration(s) {
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  if (d) return `${d} d ${h} h`;
  if (h) return `${h} h ${m} min`;
  if (m) return `${m} min ${s % 60} s`;
  return `${s} s`;
}
// short shows a peer ID or a hash as its start and end; the whole is its title.
function short(id, head = 8, tail = 6) {
  const s = el("span", { class: "mono peer-text", title: id });
  s.textContent = id.length > head + tail + 1 ? id.slice(0, head) + "…" + (tail ? id.slice(-tail) : "") : id;
  return s;
}
function bar(used, max) {
  const b = el("div", { class: "bar", role: "progressbar" });
  const f = max > 0 ? Math.min(1, used / max) : 0;
  if (f > 0.9) b.classList.add("high");
  const s = el("span");
  s.style.width = (f * 100).toFixed(1) + "%";
  b.append(s);
  return b;
}
function replace(id, nodes) { $(id).replaceChildren(...nodes); }

// stopped is set once the token is refused: the daemon restarted (it makes
// a new token at each start), and polling again would never succeed.
let stopped = false;
let failingSince = null;

class Refused extends Error {}

async function get(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (r.status === 401 || r.status === 403) {
    throw new Refused("the daemon refuses this page's token: it has restarted (it makes a new token at each start). Run `wats dashboard` for the new URL.");
  }
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

// unreachable shows the banner over the page, and greys the figures that
// stopped being current.
function unreachable(e) {
  if (e instanceof Refused) stopped = true;
  if (!failingSince) failingSince = new Date();
  const b = $("banner");
  b.textContent = e instanceof Refused ? e.message :
    `The daemon has not answered since ${failingSince.toLocaleTimeString()}: what the page shows is from before then. (${e.message || e})`;
  b.hidden = false;
  document.body.classList.add("stale");
}

function reachable() {
  failingSince = null;
  $("banner").hidden = true;
  document.body.classList.remove("stale");
}

async function poll() {
  if (stopped) return;
  try {
    const [identity, status] = await Promise.all([get("api/v1/id"), get("api/v1/status")]);
    const head = status.head;
    const after = Math.max(0, head - 10);
    const [peers, page, blobs, fetches, partials, diag] = await Promise.all([
      get("api/v1/peers"), get(`api/v1/events?after=${after}&limit=10&author_use=1`), get("api/v1/blobs?limit=10"),
      get("api/v1/blobs/fetches"), get("api/v1/blobs/partials"), get("api/v1/diag"),
    ]);
    showNode(identity, status);
    showBandwidth(status);
    showPeers(peers);
    showLog(status, page, after);
    showBlobs(status, blobs, fetches, partials);
    showAdmission(status, diag);
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    reachable();
  } catch (e) {
    unreachable(e);
  }
}

function showNode(id, st) {
  $("peer-id").textContent = id.peer_id;
  $("network").textContent = "network " + id.network;
  const r = $("reachability");
  r.textContent = "reachability: " + st.reachability;
  r.className = "badge " + st.reachability;
  r.title = { public: "peers can dial this node", private: "behind a NAT or firewall: reached through relays", unknown: "not yet found out" }[st.reachability] || "";
  $("agent").textContent = id.agent;
  $("uptime").textContent = duration(st.uptime_seconds);
  replace("addrs", (id.addrs || []).map((a) => el("li", { class: "mono" }, a)));
}

function showBandwidth(st) {
  const b = st.bandwidth;
  if (!b) { $("bandwidth-now").textContent = "not measured by this daemon"; return; }
  const last = (k) => { const s = history && history.series[k]; return s ? s[s.length - 1] : null; };
  const up = last("wats_bandwidth_bytes_total:up"), down = last("wats_bandwidth_bytes_total:down");
  $("bandwidth-now").textContent = `now ↑ ${up == null ? "–" : rate(up)}  ↓ ${down == null ? "–" : rate(down)} · since start ↑ ${bytes(b.up_bytes)} ↓ ${bytes(b.down_bytes)}`;
  const caps = [];
  caps.push("up cap " + (b.up_bytes_per_s ? rate(b.up_bytes_per_s) : "none"));
  caps.push("down cap " + (b.down_bytes_per_s ? rate(b.down_bytes_per_s) : "none"));
  caps.push(`sent in ${b.month} ${bytes(b.month_up_bytes)}` + (b.monthly_up_bytes ? ` of ${bytes(b.monthly_up_bytes)} a month` : ""));
  const p = $("bandwidth-caps");
  p.replaceChildren(caps.join(" · "));
  if (b.stranger_blobs_stopped) {
    p.append(el("br"), el("span", { class: "stopped" }, "monthly cap reached: until the month ends, blobs are served only to peers this node dialled or has known for a while"));
  }
}

function showPeers(peers) {
  peers.sort((a, b) => (b.hello - a.hello) || a.peer_id.localeCompare(b.peer_id));
  $("peer-count").textContent = `(${peers.length})`;
  replace("peer-rows", peers.map((p) => {
    const tier = el("td", { class: "tier tier-" + p.tier }, p.tier || "–",
      p.tier_reason ? el("div", { class: "muted reason" }, p.tier_reason) : "");
    return el("tr", { "data-peer": p.peer_id },
      el("td", {}, short(p.peer_id)), tier,
      el("td", { title: (p.addrs || []).join("\n") }, `${p.conn || "–"}, ${p.direction}`),
      el("td", { class: "num" }, bytes(p.bytes_up)), el("td", { class: "num" }, bytes(p.bytes_down)),
      el("td", { class: "num" }, p.served ?? 0), el("td", { class: "num" }, (p.refused ?? 0) + (p.challenged ? ` (+${p.challenged} challenged)` : "")));
  }));
}

function showLog(st, page, after) {
  const l = st.log;
  const r = lastRate("wats_events_stored_total");
  $("log-summary").textContent = `${plural(l.events, "event")} from ${plural(l.authors, "author")}, newest #${st.head}` +
    (r == null ? "" : ` · ${(r * 60).toFixed(1)} stored a minute`);
  const q = [];
  if (l.max_events) q.push(el("div", {}, `events ${l.events.toLocaleString()} of ${l.max_events.toLocaleString()}`), bar(l.events, l.max_events));
  if (l.max_bytes) q.push(el("div", {}, `bytes ${bytes(l.bytes)} of ${bytes(l.max_bytes)}`), bar(l.bytes, l.max_bytes));
  replace("log-quotas", q);
  // An author's part of the per-author quotas: what it holds now.
  const use = (a) => {
    const u = (page.author_use || {})[a];
    if (!u) return "–";
    const me = l.max_events_per_author, mb = l.max_bytes_per_author;
    return el("span", { class: "author-use" },
      me ? `${u.events.toLocaleString()} of ${me.toLocaleString()} events` : plural(u.events, "event"),
      ", " + bytes(u.bytes) + (mb ? ` of ${bytes(mb)}` : ""), mb ? bar(u.bytes, mb) : "");
  };
  const rows = page.events.map((e, i) => el("tr", { "data-event": e.id },
    el("td", { class: "num" }, after + i + 1),
    el("td", {}, new Date(e.time).toLocaleString()),
    el("td", { class: "peer-text" }, e.kind), el("td", {}, short(e.author)), el("td", {}, use(e.author)),
    el("td", {}, short(e.id, 12, 0)), el("td", { class: "num" }, (e.blobs || []).length)));
  replace("event-rows", rows.reverse());
}

function showBlobs(st, blobs, fetches, partials) {
  $("blob-summary").textContent = `${st.blobs} held, ${bytes(st.blob_bytes)}` + (st.blob_quota_bytes ? ` of ${bytes(st.blob_quota_bytes)}` : "");
  replace("blob-quota", st.blob_quota_bytes ? [bar(st.blob_bytes, st.blob_quota_bytes)] : []);
  $("fetch-count").textContent = `(${fetches.length})`;
  replace("fetch-rows", fetches.length ? fetches.map((f) => el("li", { "data-cid": f.cid },
    short(f.cid, 12, 6), ` ${bytes(f.held)} of ${bytes(f.size)}, `,
    f.provider ? el("span", {}, "from ", short(f.provider)) : (f.finding ? "finding providers" : "waiting"),
    bar(f.held, f.size))) : [el("li", { class: "muted" }, "none")]);
  // Partial blobs: what fetches that did not complete verified, kept for
  // the next fetch to go on from (ADR 0054); the least recently progressed
  // first, as the API lists them.
  $("partial-count").textContent = `(${partials.length}, ${bytes(partials.reduce((n, p) => n + p.bytes, 0))})`;
  replace("partial-rows", partials.length ? partials.slice(0, 10).map((p) => el("li", { "data-cid": p.cid },
    short(p.cid, 12, 6), ` ${bytes(p.held)} of ${bytes(p.size)} held`, p.fetching ? ", being fetched" : "",
    bar(p.held, p.size))) : [el("li", { class: "muted" }, "none")]);
  const shown = blobs.slice(0, 10); // newest first
  replace("blob-rows", shown.length ? shown.map((b) => el("li", { "data-cid": b.cid },
    short(b.cid, 12, 6), " ", b.name ? el("span", { class: "peer-text" }, b.name) : "", " ", el("span", { class: "muted" }, bytes(b.size)))) :
    [el("li", { class: "muted" }, "none")]);
}

function showAdmission(st, diag) {
  const refused = diag.requests.reduce((n, r) => n + r.refused, 0);
  $("admission-now").textContent = `${plural(refused, "request")} refused since start · challenges: ${st.challenges_issued} sent, ` +
    `${st.challenges_solved} solved, ${st.challenges_failed} failed · effort ${st.challenge_effort} bits · ` +
    `${plural(st.in_flight, "request")} in flight · stranger slots ${st.stranger_slots_used} of ${st.stranger_slots}`;
  replace("request-rows", diag.requests.map((r) => el("tr", { "data-request": r.type },
    el("td", {}, r.type), el("td", { class: "num" }, r.accepted), el("td", { class: "num refused" }, r.refused))));
}

// The graphs, from the history.
let history = null;
const charts = {};

function lastRate(key) {
  const s = history && history.series[key];
  return s ? s[s.length - 1] : null;
}

function perMinute(s) { return s ? s.map((v) => v == null ? null : v * 60) : null; }

function chart(id, title, series, data, yFmt) {
  const box = $(id);
  const width = Math.max(240, box.clientWidth);
  if (charts[id] && charts[id].series.length === series.length + 1) {
    charts[id].setData(data);
    if (Math.abs(charts[id].width - width) > 4) charts[id].setSize({ width, height: 180 });
    return;
  }
  if (charts[id]) charts[id].destroy();
  charts[id] = new uPlot({
    title, width, height: 180,
    series: [{}, ...series],
    axes: [{}, { values: (u, vals) => vals.map(yFmt), size: 84 }],
    legend: { live: false },
  }, data, box);
}

async function pollHistory() {
  if (stopped) return;
  try {
    history = await get("api/history");
  } catch (e) {
    unreachable(e);
    return;
  }
  const t = history.times.map((ms) => ms / 1000);
  const s = (k) => history.series[k] || t.map(() => null);
  // A cap of 0 is none: no line.
  const cap = (k) => s(k).map((v) => v ? v : null);
  chart("bandwidth-chart", "bytes a second, last hour", [
    { label: "up", stroke: "#c2410c", width: 2 },
    { label: "down", stroke: "#1d4ed8", width: 2 },
    { label: "up cap", stroke: "#c2410c", dash: [6, 4] },
    { label: "down cap", stroke: "#1d4ed8", dash: [6, 4] },
  ], [t, s("wats_bandwidth_bytes_total:up"), s("wats_bandwidth_bytes_total:down"),
    cap("wats_bandwidth_cap_bytes_per_second:up"), cap("wats_bandwidth_cap_bytes_per_second:down")], rate);
  // Refusals by reason: a request over its rate limit (by type), a
  // stranger's connection with the stranger slots full, a stream over the
  // peer's cap, a gossiped envelope over a budget or the log's quota, a DHT
  // request over the peer's budget.
  const types = ["hello", "sync", "replicate", "crash_report"];
  const colors = ["#7c3aed", "#1d4ed8", "#0f766e", "#b45309"];
  const sum = (...ss) => t.map((_, i) => ss.reduce((n, x) => x[i] == null ? n : (n ?? 0) + x[i], null));
  const gossip = sum(...["peer_budget", "author_budget", "quota"].map((r) => s("wats_gossip_ignored_total:" + r)));
  chart("admission-chart", "refused a minute, by reason", [
    ...types.map((ty, i) => ({ label: ty + " over its rate limit", stroke: colors[i], width: 2 })),
    { label: "strangers' connections, slots full", stroke: "#be185d", width: 2 },
    { label: "streams over a peer's cap", stroke: "#0891b2" },
    { label: "gossip over a budget or quota", stroke: "#4d7c0f" },
    { label: "DHT requests over a peer's budget", stroke: "#667085" },
  ], [t, ...types.map((ty) => perMinute(s("wats_requests_refused_total:" + ty))),
    perMinute(s("wats_strangers_refused_total")), perMinute(s("wats_streams_refused_total")), perMinute(gossip),
    perMinute(s("wats_dht_requests_refused_total"))], (v) => v.toFixed(0));
  chart("defence-chart", "a minute: challenges, bans, strangers evicted; effort (bits)", [
    { label: "challenges sent", stroke: "#b91c1c", dash: [4, 4] },
    { label: "solved", stroke: "#15803d", dash: [4, 4] },
    { label: "failed", stroke: "#7c2d12", dash: [4, 4] },
    { label: "bans", stroke: "#b91c1c", width: 2 },
    { label: "strangers evicted", stroke: "#b45309", width: 2 },
    { label: "effort", stroke: "#667085", dash: [2, 4] },
  ], [t, perMinute(s("wats_challenges_issued_total")), perMinute(s("wats_challenges_solved_total")),
    perMinute(s("wats_challenges_failed_total")), perMinute(s("wats_peers_banned_total")),
    perMinute(s("wats_strangers_evicted_total")), s("wats_challenge_effort_bits")], (v) => v.toFixed(0));
}

poll();
pollHistory();
setInterval(poll, 2000);
setInterval(pollHistory, 5000);
window.addEventListener("resize", pollHistory);
