"""A real browser on a real `tireless web`: headless Chromium (Debian's chromium and
chromedriver, nothing downloaded at run time) opens the overview and a job page of the server
the command starts, and sees what a person would: the lanes table, the chart, the timeline,
and no error in the console. Screenshots go to the test's tmp dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests import outbox
from tests.conftest import Database
from tests.support.web import Jobs, populate
from tireless import JobStore

REBIND = "rebind.attacker.example"  # the browser resolves it to 127.0.0.1, as a rebinding DNS would
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def browser_missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.access(path, os.X_OK) or shutil.which(Path(path).name)):
            return f"{path} is not installed (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture
def dashboard(db: Database, tmp_path: Path) -> Iterator[str]:
    """`tireless web` on any free port of 127.0.0.1; its address, read from what it prints."""
    env = {**os.environ, "DATABASE_URL": db.url}
    log = (tmp_path / "web.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "tireless", "web", "--bind", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "dashboard at http://127.0.0.1:" in line, line + (tmp_path / "web.log").read_text()
        yield line.split("dashboard at ", 1)[1].split()[0]
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
        log.close()


@pytest.fixture
def chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    missing = browser_missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true runs the browser test: {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager: never download a driver
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        f"--host-resolver-rules=MAP {REBIND} 127.0.0.1",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(shutil.which("chromedriver") or CHROMEDRIVER)
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_a_person_sees_the_lanes_and_a_jobs_timeline(
    store: JobStore, db: Database, dashboard: str, chromium: object, tmp_path: Path
) -> None:
    from selenium.webdriver import Chrome
    from selenium.webdriver.common.by import By

    assert isinstance(chromium, Chrome)
    driver = chromium
    jobs: Jobs = populate(store, db)

    driver.get(dashboard)
    assert driver.title == "Overview · tireless"
    lanes = driver.find_element(By.ID, "lanes")
    assert lanes.is_displayed()
    headers = [th.text for th in lanes.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers[:5] == ["Lane", "Pending", "Ready", "Claimed", "Past lease"]
    rows = {
        cells[0].text: [cell.text for cell in cells]
        for cells in (
            tr.find_elements(By.TAG_NAME, "td")
            for tr in lanes.find_elements(By.CSS_SELECTOR, "tbody tr")
        )
    }
    assert rows["cc"][1:5] == ["3", "3", "2", "1"]
    assert "open" in rows["oc"][9]
    assert "paused" in rows["oc"][8]
    chart = driver.find_element(By.ID, "finished-chart")
    assert chart.is_displayed()
    assert len(chart.find_elements(By.CSS_SELECTOR, "rect.bar")) == 3
    driver.save_screenshot(str(tmp_path / "overview.png"))

    driver.find_element(By.LINK_TEXT, "Jobs").click()
    driver.find_element(By.LINK_TEXT, str(jobs.delivered)).click()
    assert driver.title == f"Job {jobs.delivered} · tireless"
    entries = driver.find_elements(By.CSS_SELECTOR, "#timeline li")
    texts = [entry.text for entry in entries]
    assert len(texts) == 3, texts
    assert "created, pending" in texts[0]
    assert "pending → claimed" in texts[1]
    assert "held by runner-a, attempt 1" in texts[1]
    assert "claimed → delivered" in texts[2]
    assert "opened PR #3" in texts[2]
    driver.save_screenshot(str(tmp_path / "job.png"))

    console = driver.get_log("browser")  # type: ignore[no-untyped-call]  # untyped in selenium
    errors = [entry for entry in console if entry["level"] == "SEVERE"]
    assert errors == []
    assert (tmp_path / "overview.png").stat().st_size > 0


def screenshot(driver: object, tmp_path: Path, name: str) -> None:
    """Into the test's tmp dir; also into the directory TIRELESS_SCREENSHOTS names (docs/web.md's
    pictures: `TIRELESS_SCREENSHOTS=docs/images pytest tests/web/test_web_browser.py`)."""
    from selenium.webdriver import Chrome

    assert isinstance(driver, Chrome)
    targets = [tmp_path / f"{name}.png"]
    if os.environ.get("TIRELESS_SCREENSHOTS"):
        folder = Path(os.environ["TIRELESS_SCREENSHOTS"])
        folder.mkdir(parents=True, exist_ok=True)
        targets.append(folder / f"web-{name}.png")
    for target in targets:
        assert driver.save_screenshot(str(target))


def follow(driver: object, element: object, *keys: str) -> None:
    """Click element (or type keys into it) and wait until the browser shows the next page."""
    from selenium.webdriver import Chrome
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support.wait import WebDriverWait

    assert isinstance(driver, Chrome)
    assert isinstance(element, WebElement)
    page = driver.find_element(By.TAG_NAME, "html")
    if keys:
        element.send_keys(*keys)
    else:
        element.click()
    WebDriverWait(driver, 30).until(lambda _: left(page))


def left(page: object) -> bool:
    """Whether the browser has left the page whose <html> element is `page`. Chromium sometimes
    answers a question about an element of a page it is leaving with "Node with given id does not
    belong to the document" instead of a stale element: that is the same answer."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.remote.webelement import WebElement

    assert isinstance(page, WebElement)
    try:
        page.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if "does not belong to the document" in (error.msg or ""):
            return True
        raise
    return False


def test_a_person_finds_acts_on_and_follows_the_fleet(
    store: JobStore, db: Database, dashboard: str, chromium: object, tmp_path: Path
) -> None:
    from selenium.webdriver import Chrome
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    assert isinstance(chromium, Chrome)
    driver = chromium
    jobs: Jobs = populate(store, db)

    # The overview: times in the browser's zone and as "ago", a pausable auto-refresh.
    driver.get(dashboard)
    stamp = driver.find_element(By.CSS_SELECTOR, "main p.muted time")
    assert "ago" in stamp.text or "now" in stamp.text, stamp.text
    toggle = driver.find_element(By.ID, "refresh-toggle")
    assert toggle.is_displayed()
    assert toggle.text.startswith("Pause auto-refresh")
    toggle.click()
    assert toggle.text == "Resume auto-refresh"
    assert driver.find_element(By.ID, "finished-chart").is_displayed()
    assert len(driver.find_elements(By.CSS_SELECTOR, "#finished-chart polyline.depth")) == 2
    screenshot(driver, tmp_path, "overview")

    # Activity over a week, with the wait and run times.
    follow(driver, driver.find_element(By.LINK_TEXT, "Activity"))
    follow(driver, driver.find_element(By.LINK_TEXT, "7d"))
    assert driver.find_element(By.CSS_SELECTOR, "nav.windows b").text == "7d"
    durations = driver.find_element(By.ID, "durations")
    assert [th.text for th in durations.find_elements(By.TAG_NAME, "th")][:4] == [
        "Lane",
        "Kind",
        "Claimed",
        "Wait p50",
    ]
    assert driver.find_element(By.ID, "lane-chart-cc").is_displayed()
    assert driver.save_screenshot(str(tmp_path / "activity.png"))

    # Why it failed: the group, then its jobs.
    follow(driver, driver.find_element(By.LINK_TEXT, "Failures"))
    follow(driver, driver.find_element(By.LINK_TEXT, "tests failed"))
    failed = driver.find_element(By.ID, "failures")
    assert "tests failed" in failed.text
    assert failed.find_element(By.LINK_TEXT, str(jobs.failed)).is_displayed()

    # Workers: the one whose lease ran out stopped heartbeating.
    follow(driver, driver.find_element(By.LINK_TEXT, "Workers"))
    row = driver.find_element(By.CSS_SELECTOR, "#workers tr.worker-stopped-heartbeating")
    assert "runner-d" in row.text
    assert f"job {jobs.past_lease}" in row.text
    assert driver.save_screenshot(str(tmp_path / "workers.png"))

    # Find: an issue by its number, typed and sent with the keyboard.
    follow(driver, driver.find_element(By.LINK_TEXT, "Jobs"))
    search = driver.find_element(By.NAME, "q")
    follow(driver, search, "#5", Keys.ENTER)
    found = driver.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
    assert [tr.find_elements(By.TAG_NAME, "td")[1].text for tr in found] == [str(jobs.pending)]

    # Act: cancel two jobs at once, confirmed with the keyboard, and read what changed.
    driver.get(dashboard + "jobs")
    screenshot(driver, tmp_path, "jobs")
    for job_id in (jobs.pending, jobs.child):
        driver.find_element(By.CSS_SELECTOR, f'input[name="job"][value="{job_id}"]').click()
    follow(driver, driver.find_element(By.XPATH, "//button[@value='cancel']"))
    assert driver.title.startswith("Confirm: Cancel 2 job(s)")
    confirm = driver.find_element(By.ID, "confirm")
    assert driver.switch_to.active_element == confirm, "the confirmation has the focus"
    follow(driver, confirm, Keys.ENTER)
    message = driver.find_element(By.ID, "flash")
    assert message.text == f"Cancelled job {jobs.pending}; cancelled job {jobs.child}."

    # A re-run links to the run before it, and back.
    driver.find_element(By.CSS_SELECTOR, f'input[name="job"][value="{jobs.failed}"]').click()
    follow(driver, driver.find_element(By.XPATH, "//button[@value='rerun']"))
    follow(driver, driver.find_element(By.ID, "confirm"))
    flash = driver.find_element(By.ID, "flash").text
    assert flash.startswith(f"Re-ran job {jobs.failed} as job ")
    new_job = flash.removeprefix(f"Re-ran job {jobs.failed} as job ").rstrip(".")
    follow(driver, driver.find_element(By.LINK_TEXT, new_job))
    runs = driver.find_element(By.ID, "runs")
    assert f"re-run of job {jobs.failed}" in runs.text
    follow(driver, runs.find_element(By.LINK_TEXT, f"job {jobs.failed}"))
    assert f"re-run as job {new_job}" in driver.find_element(By.ID, "runs").text
    screenshot(driver, tmp_path, "job")

    # Dark mode follows the system.
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
    )
    driver.get(dashboard + "activity")
    background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 24, 30)", background
    assert driver.save_screenshot(str(tmp_path / "dark.png"))

    # On a phone: nothing wider than the screen but the tables' own scrolling.
    driver.set_window_size(390, 844)
    for path in ("", "jobs", f"jobs/{jobs.failed}", "activity", "failures", "workers"):
        driver.get(dashboard + path)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        inner = driver.execute_script("return window.innerWidth")
        assert width <= inner + 1, (path, width, inner)

    console = driver.get_log("browser")  # type: ignore[no-untyped-call]  # untyped in selenium
    assert [entry for entry in console if entry["level"] == "SEVERE"] == []


@contextmanager
def framing_site(target: str) -> Iterator[str]:
    """Another origin (a port of its own) whose page shows target in a frame."""
    page = f"<!doctype html><iframe id=f src='{target}'></iframe>".encode()

    class Framing(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Framing) as server:
        thread = threading.Thread(target=server.serve_forever)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join()


def test_a_rebound_name_and_a_foreign_frame_get_no_dashboard(
    store: JobStore, db: Database, dashboard: str, chromium: object
) -> None:
    """DNS rebinding in a real browser: a name of the attacker's that resolves to this machine
    gets neither the page nor its CSRF token; and no other site may show the page in a frame."""
    from selenium.webdriver import Chrome
    from selenium.webdriver.common.by import By

    assert isinstance(chromium, Chrome)
    driver = chromium
    populate(store, db)
    port = urlsplit(dashboard).port
    driver.get(f"http://{REBIND}:{port}/")
    assert "unknown Host" in driver.find_element(By.TAG_NAME, "body").text
    assert driver.find_elements(By.NAME, "csrf") == []
    assert "Lanes" not in driver.page_source

    # get() returns once the page and its frames have loaded (or failed to).
    with framing_site(dashboard) as site:
        driver.get(site)
    driver.switch_to.frame(driver.find_element(By.ID, "f"))
    assert driver.execute_script("return document.URL") == "chrome-error://chromewebdata/"
    assert driver.find_elements(By.ID, "lanes") == []


BANNER = 'agent: implement acme/widgets#1 "Fix it" (lane cc, attempt {})'
CAUSE = "the test suite fails on main"
PULL_URL = "https://git.example.com/acme/widgets/pulls/12"


def test_a_person_sees_why_a_job_failed_and_each_attempts_end(
    store: JobStore, db: Database, dashboard: str, chromium: object, tmp_path: Path
) -> None:
    """The cause in front: the Failures page and the jobs list show the agent's last error line,
    not the banner the output began with nor the store's "attempts exhausted" wrapper; the job
    page shows each attempt's run time, how it ended, its exit status, its stop reason, its
    output's tail and the pull request of the attempt that delivered."""
    from selenium.webdriver import Chrome
    from selenium.webdriver.common.by import By

    from tests.helpers import FORGE, OWNER, REPO, claimed, issue, tracked

    assert isinstance(chromium, Chrome)
    driver = chromium
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store).enqueue([issue(1, title="Fix it"), issue(2, title="Add it")])
    with db.connect() as conn:  # the first attempt is retried at once
        conn.execute("UPDATE tireless.policy SET backoff_base = interval '0'")
    for attempt in (1, 2, 3):
        job = claimed(store, "runner-a")
        assert job.number == 1
        output = f"{BANNER.format(attempt)}\nrunning the tests\n{CAUSE}\n"
        store.record_exit(job.id, "runner-a", attempt, job.claim_token)
        store.transition(job.id, "pending", "runner-a", note=output, token=job.claim_token)
    assert (
        db.scalar("SELECT state::text FROM tireless.job WHERE id = %(id)s", {"id": job.id})
        == "failed"
    )
    note = db.scalar("SELECT note FROM tireless.job WHERE id = %(id)s", {"id": job.id})
    assert note.startswith(f"attempts exhausted (3 of 3); last: {BANNER.format(3)}\n")
    good = claimed(store, "runner-b")
    store.deliver(good.id, "runner-b", "tireless/2", "a1" * 20, "main", "b2" * 20)
    store.claim_repos_to_poll("p1")
    outbox.record(
        store, "pull", FORGE, OWNER, REPO, "p1", good.id, result=outbox.pull(12, PULL_URL)
    )

    # The Failures page: the group and the job's row say the cause.
    driver.get(dashboard + "failures")
    groups = driver.find_element(By.ID, "failure-groups")
    assert CAUSE in groups.text
    assert "attempts exhausted" not in groups.text
    assert "agent: implement" not in groups.text
    rows = driver.find_element(By.ID, "failures")
    assert CAUSE in rows.text
    screenshot(driver, tmp_path, "failures")
    follow(driver, groups.find_element(By.LINK_TEXT, CAUSE))
    assert driver.find_element(By.ID, "failures").find_element(By.LINK_TEXT, str(job.id))

    # The jobs list: the cause and the pull request, each in its column.
    driver.get(dashboard + "jobs")
    table = driver.find_element(By.ID, "jobs")
    headers = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert "Cause" in headers
    assert "PR" in headers
    cells = {
        tr.find_elements(By.TAG_NAME, "td")[1].text: [
            td.text for td in tr.find_elements(By.TAG_NAME, "td")
        ]
        for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")
    }
    by_id = {row[1]: row for row in cells.values()}
    assert by_id[str(job.id)][headers.index("Cause")] == CAUSE
    assert by_id[str(good.id)][headers.index("PR")] == "#12"
    assert table.find_element(By.LINK_TEXT, "#12").get_attribute("href") == PULL_URL

    # The failed job's page: each attempt, its run time, stop reason and output's tail.
    driver.get(dashboard + f"jobs/{job.id}")
    assert driver.find_element(By.ID, "cause").text == CAUSE
    attempts = driver.find_element(By.ID, "attempts")
    ended = attempts.find_elements(By.CSS_SELECTOR, "tr.attempt")
    assert [tr.find_elements(By.TAG_NAME, "td")[0].text for tr in ended] == ["1", "2", "3"]
    for tr in ended:
        texts = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        assert texts[1] == "runner-a"
        assert texts[3].endswith("s"), texts  # its run time
        assert texts[6] == CAUSE
    assert [tr.find_elements(By.TAG_NAME, "td")[4].text for tr in ended] == [
        "released",
        "released",
        "failed",
    ]
    assert [tr.find_element(By.CSS_SELECTOR, "td.exit").text for tr in ended] == ["1", "2", "3"]
    tails = attempts.find_elements(By.CSS_SELECTOR, "tr.output pre")
    assert BANNER.format(3) in tails[-1].text
    assert CAUSE in tails[-1].text
    screenshot(driver, tmp_path, "job-attempts")

    # The delivered job's page: its attempt's pull request.
    driver.get(dashboard + f"jobs/{good.id}")
    delivered = driver.find_element(By.CSS_SELECTOR, "#attempts tr.attempt")
    assert delivered.find_element(By.LINK_TEXT, "#12").get_attribute("href") == PULL_URL
    assert "delivered" in delivered.text

    # The overview: a poller whose rounds stopped is flagged, not only "Next poll: 5 minutes ago".
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET next_poll_at = now() - interval '5 minutes'")
    driver.get(dashboard)
    flag = driver.find_element(By.ID, "missed-poller")
    assert flag.is_displayed()
    assert flag.text.startswith("The poller missed its rounds: 1 repositories due to be polled")
    screenshot(driver, tmp_path, "overview-missed")

    console = driver.get_log("browser")  # type: ignore[no-untyped-call]  # untyped in selenium
    assert [entry for entry in console if entry["level"] == "SEVERE"] == []
