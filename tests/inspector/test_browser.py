"""The web inspector in a real browser (Debian's chromium, headless, driven by selenium):
navigation, search, a history chain, the token check, a stored XSS payload, user
isolation and a cross-site edit. Each kind of page is saved as a screenshot under
``$AGENTMEM_SCREENSHOTS`` (default: a temporary directory), named after the page."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentmem import MemoryService
from agentmem.inspector import InspectorServer
from tests.inspector.seed import XSS, Seeded

pytestmark = pytest.mark.integration

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("AGENTMEM_SCREENSHOTS")
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _browser() -> webdriver.Chrome:
    if CHROMIUM is None or DRIVER is None:
        if os.environ.get("CI"):
            pytest.fail("chromium and chromium-driver are missing: .ci/test installs them")
        pytest.skip("needs Debian's chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1100",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    driver = _browser()
    yield driver
    driver.quit()


def _shot(driver: webdriver.Chrome, shots: Path, name: str) -> None:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(int(height) + 140, 700), 4000))
    assert driver.save_screenshot(str(shots / f"{name}.png"))
    driver.set_window_size(1280, 1100)


def _no_alert(driver: webdriver.Chrome) -> None:
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert  # noqa: B018


def _heading(driver: webdriver.Chrome) -> str:
    return str(driver.find_element(By.TAG_NAME, "h1").text)


def test_navigation_through_every_kind_of_page(
    browser: webdriver.Chrome, server: InspectorServer, seeded: Seeded, shots: Path
) -> None:
    browser.get(server.url)
    pages = [  # (the link followed, how it is found, the page's heading)
        (None, None, "Users"),
        ("alice", By.LINK_TEXT, "User alice"),
        ("alice-s1", By.LINK_TEXT, "Session alice-s1"),
        ("memories", By.LINK_TEXT, "Memories of alice"),
        ("Alice indents Python with tabs", By.PARTIAL_LINK_TEXT, "Memory"),
    ]
    for number, (link, by, heading) in enumerate(pages, start=1):
        if link is not None and by is not None:
            browser.find_element(by, link).click()
        assert _heading(browser) == heading
        if heading.startswith("Session"):
            assert "plan the trip to Bergen" in browser.page_source
            for summary in browser.find_elements(By.CSS_SELECTOR, "details > summary"):
                summary.click()  # open the collapsed messages for the picture
        _shot(browser, shots, f"{number:02d}-{heading.split()[0].lower()}")
    browser.find_element(By.LINK_TEXT, "forgetting").click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.am-plot")) == 2
    _shot(browser, shots, "06-forgetting")
    browser.find_element(By.LINK_TEXT, "contexts").click()
    assert "where does Alice live?" in browser.page_source
    assert browser.find_elements(By.CSS_SELECTOR, "svg.am-bar")  # the budget bar
    _shot(browser, shots, "07-contexts")


def test_search_shows_explained_scores(
    browser: webdriver.Chrome, server: InspectorServer, shots: Path
) -> None:
    browser.get(server.url)
    browser.find_element(By.LINK_TEXT, "alice").click()
    browser.find_element(By.LINK_TEXT, "search").click()
    box = browser.find_element(By.NAME, "q")
    box.send_keys("where does Alice live")
    box.submit()
    rows = browser.find_elements(By.CSS_SELECTOR, "table.am-hits tr")
    assert len(rows) >= 2
    assert "Alice lives in Trondheim" in rows[1].text
    segments = rows[1].find_elements(By.CSS_SELECTOR, "svg.am-bar rect")
    assert len(segments) == 5  # background, fused, temporal, importance, recency
    _shot(browser, shots, "08-search")


def test_a_history_chain_is_walked_by_its_links(
    browser: webdriver.Chrome, server: InspectorServer, seeded: Seeded, shots: Path
) -> None:
    browser.get(f"{server.origin}/u/alice/m/{seeded.oslo}")
    versions = browser.find_elements(By.CSS_SELECTOR, "table.am-history tr.am-version")
    assert [v.find_elements(By.TAG_NAME, "td")[1].text for v in versions] == [
        "Alice lives in Oslo",
        "Alice lives in Bergen",
        "Alice lives in Trondheim",
    ]
    _shot(browser, shots, "09-history")
    browser.find_element(By.PARTIAL_LINK_TEXT, "Alice lives in Trondheim").click()
    assert "History (3 versions)" in browser.page_source
    assert f"/u/alice/m/{seeded.trondheim}" in browser.current_url


def test_without_the_token_the_browser_gets_401_and_with_a_wrong_one_403(
    server: InspectorServer, shots: Path
) -> None:
    fresh = _browser()  # no cookie from the other tests
    try:
        fresh.get(f"{server.origin}/u/alice")
        assert "401" in fresh.find_element(By.TAG_NAME, "h1").text
        assert "Alice" not in fresh.page_source.replace("/u/alice", "")
        _shot(fresh, shots, "10-no-token")
        fresh.get(f"{server.origin}/u/alice?token=wrong")
        assert "403" in fresh.find_element(By.TAG_NAME, "h1").text
    finally:
        fresh.quit()


def test_a_stored_script_shows_as_text_and_does_not_run(
    browser: webdriver.Chrome, server: InspectorServer, seeded: Seeded, shots: Path
) -> None:
    for path in (f"/u/alice/m/{seeded.xss}", "/u/alice/s/alice-s1", "/u/alice/memories"):
        browser.get(f"{server.origin}{path}")
        _no_alert(browser)
        assert browser.execute_script("return window.__xss === undefined")
        assert XSS in browser.find_element(By.TAG_NAME, "body").text
        assert not browser.find_elements(By.CSS_SELECTOR, "body script, body img")
    browser.get(f"{server.origin}/u/alice/m/{seeded.xss}")
    _shot(browser, shots, "11-xss-as-text")


def test_alices_pages_show_nothing_of_bob(
    browser: webdriver.Chrome, server: InspectorServer
) -> None:
    for path in (
        "/u/alice",
        "/u/alice/memories?history=1",
        "/u/alice/contexts",
        "/u/alice/search?q=vault+code",
    ):
        browser.get(f"{server.origin}{path}")
        assert "4321" not in browser.page_source
        assert "bob-s1" not in browser.page_source


class _Forger(BaseHTTPRequestHandler):
    """Another site: a page whose form posts to the inspector (no CSRF token)."""

    target = ""

    def do_GET(self) -> None:
        body = (
            f'<form method="post" action="{self.target}"><input name="csrf" value="guess">'
            '<button id="go" type="submit">win a prize</button></form>'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_edits_work_from_the_page_and_not_from_another_site(
    browser: webdriver.Chrome,
    service: MemoryService,
    editor: InspectorServer,
    shots: Path,
) -> None:
    memory = service.long_term("erin")
    record = memory.new_record("Erin keeps bees", "semantic")
    memory.store_records([record])
    browser.get(f"{editor.origin}/u/erin/m/{record.id}?token={editor.token}")
    _shot(browser, shots, "12-memory-with-edits")
    browser.find_element(By.XPATH, "//button[text()='pin']").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.XPATH, "//button[.='unpin']"))
    assert memory.get_memory(record.id).pinned
    # A page of another origin posts to the forget route: refused, nothing deleted.
    _Forger.target = f"{editor.origin}/u/erin/m/{record.id}/forget"
    forger = ThreadingHTTPServer(("127.0.0.1", 0), _Forger)
    thread = threading.Thread(target=forger.serve_forever, daemon=True)
    thread.start()
    try:
        browser.get(f"http://127.0.0.1:{forger.server_address[1]}/")
        browser.find_element(By.ID, "go").click()
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.TAG_NAME, "h1"))
        heading = browser.find_element(By.TAG_NAME, "h1").text
        assert heading.startswith(("401", "403")), heading
    finally:
        forger.shutdown()
        forger.server_close()
    assert memory.get_memory(record.id).content == "Erin keeps bees"
