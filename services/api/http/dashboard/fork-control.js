// The run page's fork control: once the run has ended, pick the first step to execute again and an
// optional JSON merge patch of the input, and POST /v1/runs/:id/fork (docs/fork.md). The new run's
// page opens on success; an error (fork-upstream-incomplete, …) is shown beside the button.
import { api } from "./api.js";
import { h } from "./dom.js";

export function forkControl({ base, url, signal, tenant }) {
  const step = h("select", { id: "fork-step", "aria-label": "first step to execute again" });
  const patch = h("input", {
    id: "fork-patch",
    type: "text",
    size: 30,
    placeholder: 'input patch, e.g. {"retry": true}',
    "aria-label": "JSON merge patch of the input",
  });
  const button = h("button", { type: "button", id: "fork", disabled: true }, "Fork from step");
  const note = h("span", { class: "muted", id: "fork-note" });
  const el = h("span", { id: "fork-control" }, step, " ", patch, " ", button, " ", note);

  button.addEventListener("click", () => {
    let inputPatch;
    try {
      inputPatch = patch.value.trim() === "" ? undefined : JSON.parse(patch.value);
    } catch (err) {
      note.textContent = `the patch is not JSON: ${err.message}`;
      return;
    }
    button.disabled = true;
    const body = { fromStep: step.value, ...(inputPatch === undefined ? {} : { inputPatch }) };
    api(url(`${base}/fork`), { method: "POST", body, signal })
      .then((fork) => {
        const q = tenant ? `?tenant=${encodeURIComponent(tenant)}` : "";
        location.hash = `#/runs/${encodeURIComponent(fork.sharedRunId)}${q}`;
      })
      .catch((err) => {
        note.textContent = err.message;
        button.disabled = false;
      });
  });

  /** Offers the run's steps once it has ended (a fork of a run in flight is refused). */
  const update = (run, ended) => {
    const ids = (run.dag?.steps ?? []).map((s) => s.id);
    if (step.options.length !== ids.length) step.replaceChildren(...ids.map((id) => h("option", { value: id }, id)));
    button.disabled = !ended || ids.length === 0;
  };
  return { el, update };
}
