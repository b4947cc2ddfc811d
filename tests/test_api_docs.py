"""The API docs (``/docs``: Swagger UI, ``/redoc``: ReDoc) load nothing from another host.

Two ways: the pages' HTML, parsed (every ``src`` and ``href`` is on the service's own
host, and the browser is told to hold them to it), and the pages rendered in a real
Chromium that records every address any element of the page was given to load, even
one removed again when its load failed (ReDoc hides its logo when the logo cannot load,
issue 22: it came from cdn.redoc.ly).
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx
import pytest

from tests.fixtures.api import ApiServer
from tests.fixtures.browser import Browser

pytestmark = [pytest.mark.redis, pytest.mark.service]

PAGES = ("/docs", "/redoc")


class _Addresses(HTMLParser):
    """Every ``src`` and ``href`` of a page, and the tags they are on."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "srcset", "poster", "data") and value is not None:
                self.found.append((tag, value))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.strip("/"))
def test_docs_pages_refer_only_to_their_own_host(api_server: ApiServer, page: str) -> None:
    response = httpx.get(api_server.url + page, timeout=30)
    assert response.status_code == 200
    parser = _Addresses()
    parser.feed(response.text)
    assert {tag for tag, _ in parser.found} >= {"script", "link"}, parser.found
    for tag, value in parser.found:
        assert urljoin(api_server.url + page, value).startswith(api_server.url + "/"), (tag, value)
    # The browser is held to it too, whatever a script would add.
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "img-src 'self' data:" in policy
    for directive in policy.split(";"):
        assert "http" not in directive, directive
        assert "*" not in directive, directive
    # The scripts the pages load name no other host for anything the page shows.
    if page == "/redoc":
        bundle = httpx.get(api_server.url + "/docs-assets/redoc.standalone.js", timeout=30)
        assert bundle.status_code == 200
        assert b"cdn.redoc.ly" not in bundle.content


#: Run in the page before its own scripts: note the address of every element given one to
#: load (img, script, iframe, link), when it is added or changed, and every address the
#: page's security policy refused.
RECORDER = """
window.__loads = [];
const note = (el) => {
  if (el.nodeType !== 1) return;
  for (const name of ["src", "srcset", "poster", "data"]) {
    const value = el.getAttribute(name);
    if (value) window.__loads.push(new URL(value, document.baseURI).href);
  }
  if (el.tagName === "LINK" && el.getAttribute("href")) window.__loads.push(el.href);
};
new MutationObserver((records) => {
  for (const record of records) {
    if (record.type === "attributes") note(record.target);
    for (const node of record.addedNodes) {
      note(node);
      if (node.querySelectorAll) node.querySelectorAll("[src],[srcset],link[href]").forEach(note);
    }
  }
}).observe(document, {subtree: true, childList: true, attributes: true,
                      attributeFilter: ["src", "srcset", "href", "poster", "data"]});
document.addEventListener("securitypolicyviolation",
                          (e) => window.__loads.push("refused: " + e.blockedURI));
"""

#: What shows that each page has rendered, and (ReDoc) drawn its logo, or tried to.
RENDERED = {
    "/docs": "return document.querySelectorAll('.swagger-ui .opblock').length > 0",
    "/redoc": (
        "return document.querySelector('img[alt=\"redocly logo\"]') !== null"
        " || window.__loads.some((u) => u.includes('redoc.ly'))"
    ),
}


@pytest.mark.browser
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.strip("/"))
def test_docs_load_nothing_from_another_host(
    browser: Browser, api_server: ApiServer, page: str
) -> None:
    driver = browser.driver
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
    driver.execute_cdp_cmd("Network.enable", {})
    # No test reaches the internet: were anything asked of another host, it is recorded
    # above and fails here, never waited for.
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["https://*"]})
    try:
        driver.get(api_server.url + page)
        browser.wait(lambda d: d.execute_script(RENDERED[page]), message=f"{page} rendered")
        own = api_server.url + "/"
        loads = browser.js("return window.__loads")
        resources = browser.js("return performance.getEntriesByType('resource').map((e) => e.name)")
        assert resources, resources
        elsewhere = [u for u in loads + resources if not u.startswith((own, "data:", "blob:"))]
        assert elsewhere == [], elsewhere
        assert browser.errors() == []
        browser.screenshot("rendered", full=False)
    finally:
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        driver.execute_cdp_cmd("Network.disable", {})
        driver.execute_cdp_cmd(
            "Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]}
        )
