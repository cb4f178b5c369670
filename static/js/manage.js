// Organizer pages that change a campaign (templates/campaign_new.html, campaign_manage.html).
//
// New campaign: the chosen files are read here and sent, with the settings, to the organizer
// API: POST /api/campaigns/preview (nothing is saved) and, once the preview is clean,
// POST /api/campaigns/import; then the browser goes to the campaign's management page.
// Management page: copy buttons for the links shown once. No inline script (the CSP is
// default-src 'self'); every change carries the session's CSRF token (X-CSRF-Token).
(function () {
  "use strict";

  // ------------------------------------------------------------------ copy buttons

  function copyText(text, input) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // plain http on another host: the old way, from a selected field
    return new Promise(function (resolve, reject) {
      var field = input;
      if (!field) {
        field = document.createElement("textarea");
        field.value = text;
        field.setAttribute("readonly", "");
        field.className = "visually-hidden";
        document.body.appendChild(field);
      }
      field.select();
      var ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (error) {
        ok = false;
      }
      if (!input) {
        field.remove();
      }
      if (ok) {
        resolve();
      } else {
        reject(new Error("copy refused"));
      }
    });
  }

  function setupCopy() {
    var status = document.querySelector("[data-copy-status]");
    function say(message) {
      if (status) {
        status.textContent = message;
      }
    }
    document.querySelectorAll("[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var input = document.getElementById(button.getAttribute("data-copy"));
        var name = document.getElementById(button.getAttribute("aria-describedby"));
        var who = name ? name.textContent : "the link";
        copyText(input.value, input).then(
          function () {
            button.textContent = "Copied";
            button.setAttribute("data-copied", "true");
            say("The link of " + who + " is copied.");
          },
          function () {
            input.select();
            say("Copying is not allowed here: the link is selected, press Ctrl+C (⌘C).");
          }
        );
      });
    });
    document.querySelectorAll("[data-copy-all]").forEach(function (button) {
      button.addEventListener("click", function () {
        var lines = [];
        document.querySelectorAll(button.getAttribute("data-copy-all")).forEach(function (input) {
          var label = document.getElementById(input.getAttribute("aria-labelledby"));
          lines.push((label ? label.textContent + "\t" : "") + input.value);
        });
        copyText(lines.join("\n")).then(
          function () {
            say(lines.length + " links copied, one per line (name, tab, link).");
          },
          function () {
            say("Copying is not allowed here: copy each link from its field.");
          }
        );
      });
    });
    var links = document.getElementById("new-links");
    if (links) {
      links.focus();
    }
  }

  // ------------------------------------------------------------------ new campaign

  var INTEGERS = ["k", "lease_minutes", "judgments_per_pair", "seed"];
  var TEXTS = ["name", "slug", "description", "scale", "measure", "estimator", "policy"];
  var FILES = ["metadata", "judgments_fine", "judgments_broad"];

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = String(text);
    }
    return node;
  }

  function plural(n, one, many) {
    return n.toLocaleString("en") + " " + (n === 1 ? one : many || one + "s");
  }

  function setupNewCampaign(form) {
    var csrf = form.getAttribute("data-csrf");
    var maxBytes = Number(form.getAttribute("data-max-bytes")) || Infinity;
    var formError = document.getElementById("form-error");
    var busy = document.getElementById("busy");
    var section = document.getElementById("preview");
    var body = document.getElementById("preview-body");
    var createButton = document.getElementById("create-button");
    var createStatus = document.getElementById("create-status");
    var previewButton = document.getElementById("preview-button");
    var checked = false; // the preview matches the form as it is

    function field(name) {
      return document.getElementById("field-" + name);
    }

    function clearErrors() {
      formError.hidden = true;
      formError.textContent = "";
      form.querySelectorAll(".form__error").forEach(function (node) {
        node.hidden = true;
        node.textContent = "";
      });
      form.querySelectorAll("[aria-invalid]").forEach(function (input) {
        input.removeAttribute("aria-invalid");
        var ids = (input.getAttribute("aria-describedby") || "").split(" ");
        var kept = ids.filter(function (id) {
          return id && id.indexOf("error-") !== 0;
        });
        input.setAttribute("aria-describedby", kept.join(" "));
      });
    }

    // a message under the field, linked to it (aria-describedby) and announced
    function fieldError(name, message) {
      var input = field(name);
      var node = document.getElementById("error-" + name);
      if (!input || !node) {
        return false;
      }
      node.textContent = node.textContent ? node.textContent + " " + message : message;
      node.hidden = false;
      input.setAttribute("aria-invalid", "true");
      var ids = (input.getAttribute("aria-describedby") || "").split(" ");
      if (ids.indexOf("error-" + name) < 0) {
        ids.push("error-" + name);
      }
      input.setAttribute("aria-describedby", ids.join(" ").trim());
      return true;
    }

    function showFormError(message, focusField) {
      formError.textContent = message;
      formError.hidden = false;
      var target = focusField ? field(focusField) : null;
      (target || formError).focus();
    }

    function readFile(file) {
      return file.text().then(function (text) {
        return { name: file.name, text: text };
      });
    }

    // the request body: settings and files (read now, so a file changed on disk is re-read)
    function payload() {
      var data = {};
      TEXTS.forEach(function (name) {
        var value = field(name).value.trim();
        if (value !== "" || name === "name") {
          data[name] = value;
        }
      });
      INTEGERS.forEach(function (name) {
        var value = field(name).value.trim();
        if (value !== "") {
          data[name] = /^-?\d+$/.test(value) ? Number(value) : value;
        }
      });
      var target = field("target").value.trim();
      if (target !== "") {
        data.target = isNaN(Number(target)) ? target : Number(target);
      }
      data.keep_collecting = field("keep_collecting").checked;
      data.status = field("open").checked ? "open" : "draft";
      var audio = field("audio_dir").value.trim();
      if (audio !== "") {
        data.audio_dir = audio;
      }
      var runs = Array.prototype.slice.call(field("runs").files);
      var size = runs.reduce(function (sum, file) {
        return sum + file.size;
      }, 0);
      var reads = [Promise.all(runs.map(readFile))];
      FILES.forEach(function (name) {
        var file = field(name).files[0];
        if (file) {
          size += file.size;
        }
        reads.push(file ? readFile(file) : Promise.resolve(null));
      });
      if (size > maxBytes) {
        return Promise.reject(
          new Error(
            "The files are too large to send together (" + Math.round(size / 1048576) +
              " MiB; at most " + Math.round(maxBytes / 1048576) + " MiB): use mtcjudge campaign create on the server."
          )
        );
      }
      return Promise.all(reads).then(function (files) {
        data.runs = files[0];
        FILES.forEach(function (name, i) {
          if (files[i + 1]) {
            data[name] = files[i + 1];
          }
        });
        return data;
      });
    }

    function send(url, data) {
      return fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, Accept: "application/json" },
        body: JSON.stringify(data),
      }).then(function (response) {
        return response
          .json()
          .catch(function () {
            return { error: "http_error", detail: "The server answered " + response.status + "." };
          })
          .then(function (json) {
            return { status: response.status, json: json };
          });
      });
    }

    // "k: Input should be ...; target: ..." (a malformed request's 422) -> under each field
    function malformed(detail) {
      var placed = false;
      String(detail || "")
        .split("; ")
        .forEach(function (part) {
          var match = /^([a-z_]+)(?:\.[^:]*)?: (.*)$/.exec(part);
          if (match && fieldError(match[1], match[2])) {
            placed = true;
          }
        });
      return placed;
    }

    function failed(result) {
      if (result.status === 401) {
        showFormError("Your session has ended: sign in again (in another tab, to keep this form), then retry.");
      } else if (result.status === 403) {
        showFormError("The page is out of date: reload it and try again.");
      } else if (result.status === 422 && malformed(result.json.detail)) {
        showFormError("Some settings are not valid: see the messages under the fields.");
        var first = form.querySelector("[aria-invalid=true]");
        if (first) {
          first.focus();
        }
      } else {
        var detail = result.json.detail || "The server answered " + result.status + ".";
        // "target must be ...", "slug 'x' is already taken": also under the field
        var named = /^([a-z_]+) /.exec(detail);
        var focus = named && fieldError(named[1], detail) ? named[1] : null;
        showFormError(detail, focus);
      }
    }

    function figure(list, label, value, sub) {
      var item = el("div", "preview-figure");
      item.appendChild(el("dt", "preview-figure__label", label));
      var dd = el("dd", "preview-figure__value", value);
      item.appendChild(dd);
      if (sub) {
        item.appendChild(el("dd", "preview-figure__sub", sub));
      }
      list.appendChild(item);
    }

    function range(t) {
      if (t.reached) {
        return "already reached";
      }
      if (t.judgments_median === null) {
        return "not reached within the pool in most simulated runs";
      }
      var text = "about " + plural(t.judgments_median, "judgment");
      if (t.judgments_low !== null && t.judgments_high !== null) {
        text += " (" + t.judgments_low.toLocaleString("en") + "–" + t.judgments_high.toLocaleString("en") + ")";
      }
      return text;
    }

    function renderProblems(problems) {
      var box = el("div", "notice notice--error preview-problems");
      box.setAttribute("role", "alert");
      box.appendChild(el("h3", "", plural(problems.length, "problem") + " to fix before creating"));
      var list = el("ul", "plain-list");
      problems.forEach(function (p) {
        var where = p.file || p.input;
        if (p.line !== null && p.line !== undefined) {
          where += ", line " + p.line;
        }
        if (p.field) {
          where += " (" + p.field + ")";
        }
        var item = el("li");
        var link = el("a", "", where);
        var target = field(p.input) ? "field-" + p.input : null;
        if (target) {
          link.href = "#" + target;
          link.addEventListener("click", function (event) {
            event.preventDefault();
            field(p.input).focus();
          });
          item.appendChild(link);
        } else {
          item.appendChild(el("strong", "", where));
        }
        item.appendChild(document.createTextNode(": " + p.message));
        list.appendChild(item);
        fieldError(p.input, (p.line ? "Line " + p.line + ": " : "") + p.message);
      });
      box.appendChild(list);
      return box;
    }

    function renderPreview(p) {
      body.textContent = "";
      if (p.problems.length) {
        body.appendChild(renderProblems(p.problems));
      }
      if (!p.systems.length) {
        return;
      }
      var figures = el("dl", "preview-figures");
      figure(figures, "Systems", p.systems.length.toLocaleString("en"), p.systems.slice(0, 12).join(", ") + (p.systems.length > 12 ? ", …" : ""));
      figure(figures, "Queries", p.n_queries.toLocaleString("en"), plural(p.n_documents, "document") + " in all");
      figure(
        figures,
        "Pool at k = " + p.k,
        plural(p.pool_pairs, "pair"),
        "to judge for a complete evaluation; " + plural(p.n_results, "retrieved result") +
          (p.n_filtered ? ", " + plural(p.n_filtered, "result") + " left out (the query itself, same artist)" : "")
      );
      var shared = p.pool_pairs ? 1 - (p.pairs_by_systems[0] || 0) / p.pool_pairs : 0;
      figure(
        figures,
        "Overlap",
        Math.round(shared * 100) + " %",
        "of the pool pairs are retrieved by two systems or more (pool / results = " + p.overlap_ratio.toFixed(2) + ")"
      );
      if (p.judgments_given) {
        figure(figures, "Existing judgments", p.judgments_in_pool.toLocaleString("en"), "in the pool on the campaign's scale, of " + plural(p.judgments_given, "judged pair") + " given");
      }
      if (p.audio) {
        figure(
          figures,
          "Clips",
          p.audio.found.toLocaleString("en") + " of " + p.audio.needed.toLocaleString("en"),
          p.audio.missing || p.audio.unreadable.length
            ? p.audio.missing + " missing, " + p.audio.unreadable.length + " unreadable: " + plural(p.audio.unplayable_pairs, "pool pair") + " cannot be played"
            : "every clip found and readable"
        );
      }
      body.appendChild(figures);

      var projection = el("section", "preview-projection");
      projection.setAttribute("aria-labelledby", "projection-heading");
      var heading = el("h3", "", "Judgments to reach the target");
      heading.id = "projection-heading";
      projection.appendChild(heading);
      if (p.projection) {
        var target = p.projection.target;
        var lead = el("p", "preview-projection__lead");
        lead.appendChild(el("strong", "", range(target)));
        lead.appendChild(document.createTextNode(" to reach a ranking confidence of " + target.target.toFixed(2) + " (median, with the 10th–90th percentile range)."));
        projection.appendChild(lead);
        var others = el("ul", "plain-list");
        p.projection.others.forEach(function (t) {
          others.appendChild(el("li", "", "Target " + t.target.toFixed(2) + ": " + range(t)));
        });
        projection.appendChild(others);
        projection.appendChild(
          el(
            "p",
            "muted small",
            "Estimated by a quick simulated campaign (" + p.projection.runs + " runs in " +
              p.projection.seconds.toFixed(1) + " s): the unjudged pairs get scores drawn from the chosen estimator's own distribution, and the simulation judges them in the order the policy picks. Method: " +
              p.projection.method + ". A rough guide: in replays of past campaigns such " +
              "projections came within about 10 % for a 0.99 target but were often off by " +
              "half or more for 0.95 (docs/projection.md)."
          )
        );
      } else {
        projection.appendChild(el("p", "muted", p.projection_note || "No projection."));
      }
      body.appendChild(projection);

      if (p.audio && (p.audio.missing_examples.length || p.audio.unreadable.length)) {
        var audio = el("details", "preview-details");
        audio.appendChild(el("summary", "", "Clips missing or unreadable"));
        var list = el("ul", "plain-list");
        p.audio.missing_examples.forEach(function (doc) {
          list.appendChild(el("li", "", doc + ": no file"));
        });
        p.audio.unreadable.forEach(function (pair) {
          list.appendChild(el("li", "", pair[0] + ": " + pair[1]));
        });
        if (p.audio.missing > p.audio.missing_examples.length) {
          list.appendChild(el("li", "muted", "… and " + (p.audio.missing - p.audio.missing_examples.length) + " more missing"));
        }
        audio.appendChild(list);
        body.appendChild(audio);
      }

      if (p.overlap.length) {
        var details = el("details", "preview-details");
        details.appendChild(el("summary", "", "Overlap of every two systems"));
        var wrap = el("div", "table-wrap");
        var table = el("table", "data-table");
        var head = el("tr");
        ["Systems", "Shared pairs", "Share of their union"].forEach(function (label, i) {
          var th = el("th", i ? "num" : "", label);
          th.scope = "col";
          head.appendChild(th);
        });
        var thead = el("thead");
        thead.appendChild(head);
        table.appendChild(thead);
        var tbody = el("tbody");
        p.overlap.forEach(function (o) {
          var row = el("tr");
          var th = el("th", "", o.a + " · " + o.b);
          th.scope = "row";
          row.appendChild(th);
          row.appendChild(el("td", "num", o.shared.toLocaleString("en")));
          row.appendChild(el("td", "num", (o.union ? Math.round((100 * o.shared) / o.union) : 0) + " %"));
          tbody.appendChild(row);
        });
        table.appendChild(tbody);
        wrap.appendChild(table);
        details.appendChild(wrap);
        body.appendChild(details);
      }
      p.notes.forEach(function (note) {
        body.appendChild(el("p", "notice notice--warn", note));
      });
    }

    function setBusy(on, message) {
      previewButton.disabled = on;
      createButton.disabled = on || !checked;
      busy.textContent = message || "";
      form.setAttribute("aria-busy", on ? "true" : "false");
    }

    form.addEventListener("input", function () {
      if (checked) {
        checked = false;
        createButton.disabled = true;
        createStatus.textContent = "The form has changed: check the files again before creating.";
      }
    });
    form.addEventListener("change", function (event) {
      if (event.target.type === "file" && checked) {
        checked = false;
        createButton.disabled = true;
        createStatus.textContent = "The files have changed: check them again before creating.";
      }
    });

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      clearErrors();
      if (!field("runs").files.length) {
        fieldError("runs", "Choose at least one run file.");
        showFormError("Choose the run files first.", "runs");
        return;
      }
      setBusy(true, "Checking the files and simulating the campaign (a few seconds)…");
      payload()
        .then(function (data) {
          return send(form.getAttribute("data-preview-url"), data);
        })
        .then(
          function (result) {
            var preview = result.status === 200 ? result.json : result.json.preview;
            if (preview) {
              checked = result.status === 200 && preview.ok;
              renderPreview(preview);
              section.hidden = false;
              createStatus.textContent = checked ? "" : "Fix the problems above, then check again.";
              setBusy(false, checked ? "Checked: see the preview below." : "Problems found: see the preview below.");
              section.focus();
            } else {
              setBusy(false, "");
              failed(result);
            }
          },
          function (error) {
            setBusy(false, "");
            showFormError(error.message || "The files could not be read.");
          }
        );
    });

    createButton.addEventListener("click", function () {
      clearErrors();
      if (!field("name").value.trim()) {
        fieldError("name", "Give the campaign a name.");
        showFormError("The campaign needs a name.", "name");
        return;
      }
      setBusy(true, "");
      createStatus.textContent = "Creating the campaign…";
      payload()
        .then(function (data) {
          return send(form.getAttribute("data-import-url"), data);
        })
        .then(
          function (result) {
            if (result.status === 201) {
              createStatus.textContent = "Created. Opening its management page…";
              window.location.assign("/campaigns/" + encodeURIComponent(result.json.slug) + "/manage?done=created");
              return;
            }
            setBusy(false, "");
            createStatus.textContent = "";
            failed(result);
          },
          function (error) {
            setBusy(false, "");
            createStatus.textContent = "";
            showFormError(error.message || "The files could not be read.");
          }
        );
    });
  }

  setupCopy();
  var form = document.getElementById("new-campaign");
  if (form) {
    setupNewCampaign(form);
  }
})();
