/// The reading page: static HTML, script and style, the same for every
/// postcard. The script fetches the document, asks for the password, derives
/// the key with WebCrypto's PBKDF2 and opens the blob with AES-GCM, all in the
/// browser; the server never sees the password. Texts are put in with
/// `textContent` only, and the Content-Security-Policy allows no inline script.
enum Page {
    static let html = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>Private parts of a mail</title>
        <link rel="stylesheet" href="../assets/reader.css">
        <script src="../assets/reader.js" defer></script>
        </head>
        <body>
        <main>
        <h1>Private parts of a mail</h1>
        <p id="intro">The sender marked parts of this mail as private. Enter the password the sender gave you to read them. The password is checked in your browser and never sent anywhere.</p>
        <p id="status" role="status" aria-live="polite">Loading…</p>
        <form id="unlock" hidden>
        <label for="password">Password</label>
        <input id="password" name="password" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="XXXX-XXXX-XXXX-XXXX">
        <button id="reveal" type="submit">Show</button>
        </form>
        <article id="mail" hidden>
        <dl>
        <dt>From</dt><dd id="from"></dd>
        <dt>Subject</dt><dd id="subject"></dd>
        </dl>
        <pre id="body"></pre>
        <section id="others" hidden><h2>Other private parts</h2><ol id="other-list"></ol></section>
        </article>
        </main>
        </body>
        </html>

        """

    static let css = """
        body { font-family: system-ui, sans-serif; margin: 0; background: #f6f6f4; color: #1d1d1b; }
        main { max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
        form { display: flex; gap: .5rem; align-items: center; margin: 1rem 0; }
        input { font: 1.1rem ui-monospace, monospace; letter-spacing: .08em; padding: .4rem; flex: 1; }
        button { font-size: 1rem; padding: .4rem 1rem; }
        #status.error { color: #a40000; font-weight: bold; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
        dt { font-weight: bold; }
        dd { margin: 0; }
        pre { white-space: pre-wrap; font-family: inherit; background: #fff; padding: 1rem; border: 1px solid #ddd; }
        .span { background: #fff3bf; border-bottom: 1px dotted #7a6500; }
        .span.locked { background: #222; color: #fff; font-family: ui-monospace, monospace; padding: 0 .2em; }

        """

    static let script = #"""
        "use strict";
        // Reading page of mailsec: the blob format is documented in SpanBlob.swift
        // (magic MSPE, version 1, PBKDF2-HMAC-SHA256, AES-256-GCM, header as AAD).
        (function () {
          const $ = (id) => document.getElementById(id);
          const id = decodeURIComponent(location.pathname.split("/").pop());
          let doc = null;

          function status(text, isError) {
            $("status").textContent = text;
            $("status").className = isError ? "error" : "";
          }

          function b64url(text) {
            const b64 = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
            const raw = atob(b64);
            const out = new Uint8Array(raw.length);
            for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
            return out;
          }

          // Fills a text (array of segments) into `element`: strings as text,
          // numbers as span places, filled from `spans` when given.
          function render(element, segments, spans) {
            element.replaceChildren();
            for (const segment of segments) {
              if (typeof segment === "string") {
                element.append(document.createTextNode(segment));
              } else {
                const mark = document.createElement("span");
                mark.className = spans ? "span" : "span locked";
                mark.dataset.span = String(segment);
                mark.textContent = spans ? spans[segment - 1] : "[#" + segment + "]";
                element.append(mark);
              }
            }
          }

          function show(spans) {
            render($("from"), doc.from, spans);
            render($("subject"), doc.subject, spans);
            render($("body"), doc.body, spans);
            const placed = new Set();
            for (const segment of doc.from.concat(doc.subject, doc.body)) {
              if (typeof segment === "number") placed.add(segment);
            }
            const list = $("other-list");
            list.replaceChildren();
            for (let n = 1; n <= doc.spans; n++) {
              if (placed.has(n)) continue;
              const item = document.createElement("li");
              render(item, [n], spans);
              list.append(item);
            }
            $("others").hidden = list.children.length === 0;
            $("mail").hidden = false;
          }

          async function open(password) {
            const blob = b64url(doc.blob);
            const view = new DataView(blob.buffer);
            const magic = String.fromCharCode(blob[0], blob[1], blob[2], blob[3]);
            const iterations = view.getUint32(6);
            if (magic !== "MSPE" || blob[4] !== 1 || blob[5] !== 1 || iterations < 600000 || iterations > 10000000) {
              throw new Error("format");
            }
            const header = blob.slice(0, 38);
            const salt = blob.slice(10, 26);
            const nonce = blob.slice(26, 38);
            const normalized = password.toUpperCase().replace(/[\s-]/g, "");
            const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(normalized), "PBKDF2", false, ["deriveKey"]);
            const key = await crypto.subtle.deriveKey({ name: "PBKDF2", hash: "SHA-256", salt: salt, iterations: iterations },
                                                      material, { name: "AES-GCM", length: 256 }, false, ["decrypt"]);
            const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce, additionalData: header, tagLength: 128 },
                                                      key, blob.slice(38));
            return JSON.parse(new TextDecoder().decode(plain));
          }

          async function unlock(event) {
            event.preventDefault();
            const password = $("password").value;
            $("reveal").disabled = true;
            status("Checking the password…", false);
            const started = performance.now();
            try {
              const spans = await open(password);
              const elapsed = performance.now() - started;
              document.body.dataset.decryptMs = elapsed.toFixed(1);
              show(spans);
              $("unlock").hidden = true;
              status("The private parts are shown below.", false);
            } catch (error) {
              document.body.dataset.decryptMs = (performance.now() - started).toFixed(1);
              status(error && error.message === "format"
                ? "This page cannot read the encrypted parts (unknown format)."
                : "Wrong password. Nothing was revealed; check the password and try again.", true);
            } finally {
              $("reveal").disabled = false;
            }
          }

          async function load() {
            if (!window.crypto || !crypto.subtle) {
              status("This page needs a secure (https) connection to decrypt.", true);
              return;
            }
            let response;
            try {
              response = await fetch("../api/postcards/" + encodeURIComponent(id), { cache: "no-store" });
            } catch (error) {
              status("The server cannot be reached.", true);
              return;
            }
            if (!response.ok) {
              status(response.status === 404 ? "There is no such mail here: it has expired or was deleted." : "The server answered with an error.", true);
              return;
            }
            doc = await response.json();
            show(null);
            $("unlock").hidden = false;
            $("unlock").addEventListener("submit", unlock);
            status("Enter the password to read the private parts.", false);
            document.body.dataset.ready = "1";
          }

          load();
        })();

        """#
}
