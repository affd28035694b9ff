//! Headless Chromium for the live page's tests: one-shot runs that print the DOM after the
//! page's scripts ran or save a screenshot, and a session driven over the DevTools protocol
//! that reads the rendered text of one page as long as the test needs it (across a daemon
//! restart).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// `$CUZK_CHROMIUM`, else the first of Chromium's usual names on `PATH`.
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CUZK_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Chromium headless with its own profile (so runs never share one), run as root in CI.
fn headless(binary: &Path, profile: &Path) -> Command {
    let mut command = Command::new(binary);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// The page's DOM once its scripts have run for `budget_ms` of virtual time.
pub fn dump_dom(binary: &Path, url: &str, budget_ms: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = headless(binary, profile.path())
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .args(["--dump-dom", url])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium --dump-dom: {}", out.status);
    String::from_utf8(out.stdout).unwrap()
}

/// Saves a PNG of the page at `width`×`height` once its scripts have run for `budget_ms`.
pub fn screenshot(binary: &Path, url: &str, budget_ms: u32, size: (u32, u32), png: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let status = headless(binary, profile.path())
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("--screenshot={}", png.display()))
        .arg(url)
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "chromium --screenshot: {status}");
    assert!(png.is_file(), "no screenshot at {}", png.display());
}

/// One page in a running browser, read over the DevTools protocol.
pub struct Session {
    browser: Child,
    socket: WebSocket<TcpStream>,
    /// The page's session on the browser's socket.
    page: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Session {
    /// Starts Chromium and opens `url` in it.
    pub fn open(binary: &Path, url: &str) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let mut browser = headless(binary, profile.path())
            .args(["--remote-debugging-port=0", "--window-size=1400,1000"])
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Chromium says where its protocol listens on stderr; the rest of stderr is drained.
        let stderr = browser.stderr.take().unwrap();
        let (tell, told) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("ws://") {
                    let _ = tell.send(line[at..].trim().to_owned());
                }
            }
        });
        let endpoint = told
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium prints its DevTools endpoint within 30 s");
        // ws://127.0.0.1:PORT/devtools/browser/ID
        let host = endpoint["ws://".len()..].split('/').next().unwrap();
        let stream = TcpStream::connect(host).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let (socket, _) = tungstenite::client(endpoint.as_str(), stream).unwrap();
        let mut session = Session {
            browser,
            socket,
            page: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = session.call("Target.createTarget", json!({ "url": url }));
        let attached = session.call(
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        session.page = attached["sessionId"].as_str().unwrap().to_owned();
        session
    }

    /// Sends one command (to the page once attached) and waits for its answer, skipping events.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.page.is_empty() {
            message["sessionId"] = json!(self.page);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap();
        loop {
            let Message::Text(text) = self.socket.read().unwrap() else {
                continue;
            };
            let answer: Value = serde_json::from_str(&text).unwrap();
            if answer["id"] == id {
                assert!(answer.get("error").is_none(), "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }

    /// The text the page shows now (its script excluded), the Gantt's SVG text included.
    pub fn text(&mut self) -> String {
        let expression = "[...document.querySelectorAll('header, #banner, main')]\
                          .map(e => e.textContent).join('\\n')";
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        result["result"]["value"].as_str().unwrap_or("").to_owned()
    }

    /// Saves a PNG of what the page shows now.
    pub fn screenshot(&mut self, png: &Path) {
        use base64::Engine as _;
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        let data = shot["data"].as_str().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        std::fs::write(png, bytes).unwrap();
    }

    /// Reads the page until `check` holds of its text, for at most `limit`; the last text.
    pub fn until(&mut self, limit: Duration, what: &str, check: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let text = self.text();
            if check(&text) {
                return text;
            }
            assert!(
                start.elapsed() < limit,
                "the page did not show {what} within {limit:?}; it shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.browser.kill();
        let _ = self.browser.wait();
    }
}
