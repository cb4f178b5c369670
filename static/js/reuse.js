// Reusing judgments from the organizer pages (docs/reuse.md):
//
// New-campaign page, "restore from an export bundle": the chosen zip is sent as it is to
// POST /api/campaigns/import-bundle; then the browser goes to the new campaign's management
// page. Management page, "add systems": the chosen run files are read here and sent by name
// to POST /api/campaigns/{slug}/runs; then the page reloads with its notice. A refusal is
// shown above the form, in the API's words (file and line, or the member of the bundle).
// Every request carries the session's CSRF token (X-CSRF-Token); no inline script.
(function () {
  "use strict";

  function readText(file) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () {
        resolve({ name: file.name, text: String(reader.result) });
      };
      reader.onerror = function () {
        reject(new Error(file.name + ": the browser could not read this file"));
      };
      reader.readAsText(file);
    });
  }

  function failure(response) {
    return response
      .json()
      .catch(function () {
        return {};
      })
      .then(function (body) {
        var detail = body && body.detail;
        if (Array.isArray(detail)) {
          detail = detail
            .map(function (d) {
              return d.msg;
            })
            .join("; ");
        }
        if (response.status === 413) {
          detail = "The files are larger than the server accepts.";
        }
        throw new Error(detail || "The server answered " + response.status + ".");
      });
  }

  function setup(form) {
    var kind = form.getAttribute("data-reuse");
    var error = form.querySelector("[role=alert]");
    var status = form.querySelector("[data-reuse-status]");
    var button = form.querySelector("button[type=submit]");

    function show(message) {
      error.textContent = message;
      error.hidden = false;
      error.focus();
    }

    function request() {
      var headers = { "X-CSRF-Token": form.getAttribute("data-csrf"), Accept: "application/json" };
      var audio = form.querySelector("[name=audio_dir]").value.trim();
      if (kind === "restore") {
        var bundle = form.querySelector("[name=bundle]").files[0];
        if (!bundle) {
          return Promise.reject(new Error("Choose the bundle (a .zip file)."));
        }
        var params = new URLSearchParams({ name: bundle.name });
        var slug = form.querySelector("[name=slug]").value.trim();
        if (slug) {
          params.set("slug", slug);
        }
        if (audio) {
          params.set("audio_dir", audio);
        }
        headers["Content-Type"] = "application/zip";
        return fetch(form.getAttribute("data-url") + "?" + params.toString(), {
          method: "POST",
          credentials: "same-origin",
          headers: headers,
          body: bundle,
        });
      }
      var runs = Array.prototype.slice.call(form.querySelector("[name=runs]").files);
      if (!runs.length) {
        return Promise.reject(new Error("Choose the run files of the new systems."));
      }
      var metadata = form.querySelector("[name=metadata]").files[0];
      return Promise.all(runs.map(readText))
        .then(function (texts) {
          return (metadata ? readText(metadata) : Promise.resolve(null)).then(function (meta) {
            return { runs: texts, metadata: meta, audio_dir: audio || null };
          });
        })
        .then(function (body) {
          headers["Content-Type"] = "application/json";
          return fetch(form.getAttribute("data-url"), {
            method: "POST",
            credentials: "same-origin",
            headers: headers,
            body: JSON.stringify(body),
          });
        });
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      error.hidden = true;
      button.disabled = true;
      status.textContent = kind === "restore" ? "Checking and restoring…" : "Adding the systems…";
      request()
        .then(function (response) {
          return response.ok ? response.json() : failure(response);
        })
        .then(function (body) {
          status.textContent = "Done.";
          if (kind === "restore") {
            window.location.assign(
              "/campaigns/" + encodeURIComponent(body.slug) + "/manage?done=restored"
            );
          } else {
            window.location.assign(form.getAttribute("data-done"));
          }
        })
        .catch(function (problem) {
          status.textContent = "";
          button.disabled = false;
          show(problem.message);
        });
    });
  }

  document.querySelectorAll("form[data-reuse]").forEach(setup);
})();
