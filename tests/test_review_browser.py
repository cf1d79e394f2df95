"""Reviewer's browser check: the chapter's Previous/Next links stay in the tab and the session, so a prediction
answered on one page still counts on Check yourself after following Next (headless Chromium, the real server)."""

import time

import pytest

from tests.test_browser import _wait_rendered, browser, server  # noqa: F401 (module-scoped fixtures)

pytestmark = pytest.mark.browser


def _click(drv, el):
    drv.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", el)


def test_next_link_keeps_tab_and_predictions(browser, server):  # noqa: F811
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/ppo")
    _wait_rendered(browser)
    tabs = list(browser.window_handles)
    # A = −2, ρ = 0.6, ε = 0.2: min(−1.2, −1.6) = −1.6, so clipping does change the objective; commit "no" (wrong)
    no = browser.find_elements(By.XPATH, '//div[@data-testid="stRadio"]//p[text()="no"]')[0]
    _click(browser, no)
    time.sleep(1.5)
    commit = [b for b in browser.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Commit and reveal"][0]
    _click(browser, commit)
    _wait_rendered(browser)
    assert "Not quite: you said no; lab computes yes" in browser.find_element(By.TAG_NAME, "body").text
    nxt = [a for a in browser.find_elements(By.TAG_NAME, "a") if a.text.strip().startswith("Next:")][0]
    assert nxt.get_attribute("target") != "_blank", "Next must not open a new tab (a new session forgets the answers)"
    _click(browser, nxt)
    time.sleep(2)
    _wait_rendered(browser)
    assert browser.window_handles == tabs
    assert browser.current_url.split("?")[0].endswith("/dpo"), browser.current_url
    cy = [a for a in browser.find_elements(By.CSS_SELECTOR, '[data-testid="stSidebarNav"] a') if "Check yourself" in a.text][0]
    _click(browser, cy)
    time.sleep(2)
    _wait_rendered(browser)
    assert "Not quite: you said no; lab computes yes" in browser.find_element(By.TAG_NAME, "body").text


@pytest.mark.parametrize("page", ["compare", "feedback", "agentic"])
def test_formulas_fit_the_column_at_1280(browser, server, page):  # noqa: F811
    """At a 1280-px window with the sidebar open, no displayed formula is cut off at the right edge."""
    browser.set_window_size(1280, 900)
    browser.get(f"{server}/{page}")
    _wait_rendered(browser)
    over = browser.execute_script("""return [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
        .filter(e => e.scrollWidth > e.clientWidth + 2).map(e => e.textContent.slice(0, 60))""")
    assert not over, over


def test_dynamics_legends_do_not_cover_titles(browser, server):  # noqa: F811
    """Dynamics' loss / KL / gradient-norm charts sit a third of the page wide with up to three objectives:
    their legends must not be drawn over their titles (measured on the rendered SVG)."""
    browser.set_window_size(1280, 2600)
    browser.get(f"{server}/dynamics")
    _wait_rendered(browser)
    time.sleep(2)
    hits = browser.execute_script("""
        const out = [];
        for (const d of document.querySelectorAll('.js-plotly-plot')) {
            const t = d.querySelector('.gtitle'), l = d.querySelector('.legend');
            if (!t || !l) continue;
            const a = t.getBoundingClientRect(), b = l.getBoundingClientRect();
            const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
            if (overlap && /per step/.test(t.textContent)) out.push(t.textContent);
        }
        return out;""")
    assert not hits, hits


def test_course_map_and_quiz_links_stay_in_the_tab(browser, server):  # noqa: F811
    """Home's course map and the Credit page's question-bank links switch pages in place (no target=_blank), and the
    quiz link carries its paper filter."""
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/")
    _wait_rendered(browser)
    tabs = list(browser.window_handles)
    main = browser.find_element(By.CSS_SELECTOR, '[data-testid="stMain"]')
    links = [a for a in main.find_elements(By.TAG_NAME, "a") if a.text.strip() == "Preferences and reward models"]
    assert links, "the course map links each chapter"
    assert all(a.get_attribute("target") != "_blank" for a in links)
    _click(browser, links[-1])
    time.sleep(2)
    _wait_rendered(browser)
    assert browser.window_handles == tabs and browser.current_url.split("?")[0].endswith("/preferences"), browser.current_url
    browser.get(f"{server}/credit")
    _wait_rendered(browser)
    quiz = [a for a in browser.find_elements(By.CSS_SELECTOR, '[data-testid="stMain"] a') if a.text.strip() == "scar"]
    assert quiz and quiz[0].get_attribute("target") != "_blank"
    _click(browser, quiz[0])
    time.sleep(2)
    _wait_rendered(browser)
    assert browser.window_handles == tabs
    assert "/credit_quiz" in browser.current_url and "paper=scar" in browser.current_url, browser.current_url
