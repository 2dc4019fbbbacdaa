// The dashboard: plain ES modules, no build step. Hash routes: #/runs (list, filters and paging in
// the hash's query), #/runs/<id> (one run, live), #/schedules, #/operator (operators only).
import { api, ApiError, session } from "./api.js";
import { h } from "./dom.js";
import { renderOperator } from "./operator-page.js";
import { renderRun } from "./run-page.js";
import { renderRuns } from "./runs-page.js";
import { renderSchedules } from "./schedules-page.js";

const $ = (id) => document.getElementById(id);
let me;
let cleanup = () => {};

function parseHash() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  return { parts: path.split("/").filter(Boolean), params: new URLSearchParams(query) };
}

async function route() {
  cleanup();
  cleanup = () => {};
  const view = $("view");
  view.replaceChildren();
  if (!me) return;
  const { parts, params } = parseHash();
  const ctx = { me, view };
  try {
    if (parts[0] === "runs" && parts[1]) cleanup = renderRun(ctx, decodeURIComponent(parts[1]), params);
    else if (parts[0] === "operator" && me.role === "operator") cleanup = renderOperator(ctx);
    else if (parts[0] === "schedules") cleanup = renderSchedules(ctx, params);
    else cleanup = renderRuns(ctx, params);
  } catch (err) {
    view.append(h("p", { class: "error" }, err.message));
  }
}

async function signIn() {
  $("login-error").textContent = "";
  try {
    me = await api("/v1/me");
  } catch (err) {
    me = undefined;
    session.clear();
    $("login").hidden = false;
    $("login-error").textContent = err instanceof ApiError && err.status === 401 ? "unknown token" : err.message;
    return;
  }
  $("login").hidden = true;
  $("nav").hidden = false;
  $("sign-out").hidden = false;
  $("nav-operator").hidden = me.role !== "operator";
  $("who").textContent = me.role === "tenant" ? `tenant ${me.tenantId}` : `operator ${me.name}`;
  await route();
}

// A token in the URL fragment (never sent to the server) signs in, then leaves the address bar.
if (location.hash.startsWith("#token=")) {
  session.set(decodeURIComponent(location.hash.slice("#token=".length)));
  history.replaceState(null, "", `${location.pathname}#/runs`);
}
$("login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  session.set($("token").value.trim());
  void signIn();
});
$("sign-out").addEventListener("click", () => {
  session.clear();
  location.reload();
});
window.addEventListener("hashchange", () => void route());
if (session.token()) void signIn();
else $("login").hidden = false;
