//! Headless Chromium for the tests that check pages in a real browser: finding the
//! binary, loading a page from `file://` and reading its DOM after scripts ran.
//!
//! Chromium must be installed (`apt-get install chromium`; `scripts/test` does it);
//! without it these tests fail and say so. `GPUBENCH_CHROMIUM` names another binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use scraper::{Html, Selector};

const CANDIDATES: &[&str] = &["chromium", "chromium-browser", "google-chrome", "chrome"];

pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("GPUBENCH_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in CANDIDATES {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "chromium not found on PATH: the report's browser test needs it. Install it with \
         `apt-get install chromium` (scripts/test does this), or point GPUBENCH_CHROMIUM at \
         a Chromium or Chrome binary"
    );
}

/// Runs headless Chromium on `url` with `extra` arguments; returns stdout.
pub fn run_chromium(work: &Path, url: &str, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(url)
    .current_dir(work)
    .env("HOME", profile.path())
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("failed to start chromium: {e}"));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {url}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn file_url(path: &Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

pub fn dump_dom(work: &Path, url: &str) -> Html {
    let dom = run_chromium(work, url, &["--dump-dom".to_string()]);
    assert!(dom.contains("</html>"), "no DOM from chromium: {dom}");
    Html::parse_document(&dom)
}

pub fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}
