"""What the browser test's steps share: the environment, Selenium helpers, logging in.
Environment: BASE (blobd's URL), ADMIN and READER (tokens), OUT (screenshots), WORK (temp dir)."""
import os, time
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import WebDriverWait

BASE, ADMIN, READER = os.environ["BASE"], os.environ["ADMIN"], os.environ["READER"]
OUT, WORK = os.environ["OUT"], os.environ["WORK"]
PORT = int(BASE.rsplit(":", 1)[1])
START = time.time()


def step(text):
    print(f"[{time.time() - START:6.1f}s] {text}", flush=True)


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def api(method, path, token=ADMIN, **kw):
    headers = kw.pop("headers", {})
    if token:
        headers["Authorization"] = "Bearer " + token
    return requests.request(method, BASE + path, headers=headers, timeout=60, **kw)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,860",
                "--autoplay-policy=no-user-gesture-required", "--mute-audio"]:
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(driver, condition, what, timeout=30):
    try:
        # An element the page re-rendered between finding it and reading it is stale: look again.
        return WebDriverWait(driver, timeout, poll_frequency=0.1,
                             ignored_exceptions=[StaleElementReferenceException]).until(lambda d: condition(d))
    except Exception:
        raise AssertionError(f"timed out: {what}")


def click(element):
    """Clicks as a user would: the element scrolled to the middle of the window first."""
    element.parent.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def css(driver, selector):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def shot(driver, name):
    driver.save_screenshot(os.path.join(OUT, name + ".png"))


UNNAMED = """
const named = (el) => (el.getAttribute('aria-label') || '').trim() || (el.getAttribute('aria-labelledby') && document.getElementById(el.getAttribute('aria-labelledby'))?.textContent.trim())
  || (el.id && document.querySelector('label[for="' + el.id + '"]')?.textContent.trim()) || el.closest('label')?.textContent.trim()
  || (['BUTTON', 'A', 'SUMMARY'].includes(el.tagName) && el.textContent.trim()) || el.getAttribute('title') || el.getAttribute('alt');
return [...document.querySelectorAll('button, a[href], input, select, textarea, summary')]
  .filter((el) => el.offsetParent !== null || el.type === 'file').filter((el) => !named(el)).map((el) => el.outerHTML.slice(0, 120));
"""


def accessible(driver, view):
    unnamed = driver.execute_script(UNNAMED)
    check(not unnamed, f"{view}: controls without an accessible name: {unnamed}")


def login(driver, base, token):
    driver.get(base + "/ui/")
    wait(driver, lambda d: css(d, "#token") and css(d, "#token")[0].is_displayed() or css(d, "#principal") and css(d, "#principal")[0].text, "login form")
    if css(driver, "#token")[0].is_displayed():
        css(driver, "#token")[0].send_keys(token)
        click(css(driver, "#login-form button")[0])
    wait(driver, lambda d: d.find_element(By.ID, "principal").text, "principal shown")


def go(driver, hash_):
    driver.execute_script("location.hash = arguments[0]", hash_)


def count_text(driver):
    return driver.find_element(By.ID, "count").text
