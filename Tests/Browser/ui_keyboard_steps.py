"""The browser test's keyboard steps: Tab walks through the login and the folder view, each
stop with its accessible name (as Chromium computes it) and a visible focus ring; log in, open a
bucket, sort, and the new-folder and delete dialogs with Tab, Enter and Escape only."""
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from page_helpers import ADMIN, api, check, css, go, shot, step, wait

LOGIN_STOPS = [("link", "blobd home"), ("textbox", "Bearer token"), ("button", "Log in")]
FOLDER_STOPS = [("link", "blobd home"), ("link", "Browse"), ("link", "Share links"), ("link", "Keys"), ("link", "Bucket settings"),
                ("button", "Grants"), ("button", "Log out"), ("link", "Buckets"), ("searchbox", "Filter by prefix"),
                ("button", "Upload files"), ("button", "Upload folder"), ("button", "New folder"), ("checkbox", "Select all"),
                ("button", "Name"), ("button", "Size"), ("button", "Type"), ("button", "Modified"),
                ("checkbox", "Select clip.mp4"), ("link", "clip.mp4"), ("checkbox", "Select del-a.txt"), ("link", "del-a.txt")]


def press(driver, *keys):
    ActionChains(driver).send_keys(*keys).perform()


def focused(driver):
    element = driver.switch_to.active_element
    return element.aria_role, element.accessible_name


def ring(driver):
    """Whether the focused element shows the page's focus ring (:focus-visible)."""
    return driver.execute_script("const s = getComputedStyle(document.activeElement); return s.outlineStyle === 'solid' && s.outlineWidth === '3px'")


def walk(driver, expected, what):
    """Tabs from the top of the page through len(expected) stops. Tab goes on from the last
    focused place, so first it runs to the end of the page, where the focus leaves the document."""
    for _ in range(200):
        press(driver, Keys.TAB)
        if driver.execute_script("return document.activeElement === document.body"):
            break
    check(driver.execute_script("return document.activeElement === document.body"), f"{what}: Tab reaches the end of the page")
    stops = []
    for _ in expected:
        press(driver, Keys.TAB)
        stops.append(focused(driver))
        check(ring(driver), f"{what}: a visible focus ring on {stops[-1]}")
    check(stops == expected, f"{what}: Tab stops {stops}")


def name_dialog_open(driver):
    return driver.execute_script("return document.getElementById('name-dialog').open")


def keyboard_login(driver):
    walk(driver, LOGIN_STOPS, "login")
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    check(focused(driver) == ("textbox", "Bearer token"), f"Shift+Tab back to the token: {focused(driver)}")
    press(driver, ADMIN, Keys.ENTER)
    wait(driver, lambda d: d.find_element("id", "principal").text, "logged in with Enter")
    wait(driver, lambda d: focused(d) == ("heading", "Buckets"), "the focus on the buckets' heading")
    # New bucket, then each bucket (inbox too, though it holds nothing yet) and its Delete.
    for stop in [("button", "New bucket"), ("link", "big"), ("button", "Delete bucket big"), ("link", "inbox"),
                 ("button", "Delete bucket inbox"), ("link", "photos")]:
        press(driver, Keys.TAB)
        check(focused(driver) == stop, f"Tab goes to {stop}: {focused(driver)}")
    press(driver, Keys.ENTER)
    wait(driver, lambda d: focused(d) == ("heading", "photos/") and len(css(d, "#rows tr")) >= 6, "photos/ opened with Enter")


def keyboard_sort(driver):
    driver.execute_script("document.querySelector(\"th[data-by='name'] button\").focus()")
    press(driver, Keys.ENTER)
    wait(driver, lambda d: css(d, "th[data-by='name']")[0].get_attribute("aria-sort") == "descending", "sorted with Enter")
    check(focused(driver) == ("button", "Name"), "the focus stays on the header")
    press(driver, Keys.ENTER)
    wait(driver, lambda d: css(d, "th[data-by='name']")[0].get_attribute("aria-sort") == "ascending", "sorted back")


def keyboard_new_folder(driver):
    driver.execute_script("document.getElementById('new-folder').focus()")
    press(driver, Keys.ENTER)
    wait(driver, name_dialog_open, "the new-folder dialog")
    check(focused(driver) == ("textbox", "Folder name"), f"the focus in the name field: {focused(driver)}")
    order = []
    for back in [False, False, False, True]:
        if back:
            ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
        else:
            press(driver, Keys.TAB)
        order.append(focused(driver)[1])
    check(order == ["Cancel", "Create", "Folder name", "Create"], f"Tab stays in the dialog: {order}")
    press(driver, Keys.ESCAPE)
    wait(driver, lambda d: not name_dialog_open(d), "Escape closes the dialog")
    check(focused(driver) == ("button", "New folder"), f"the focus back on New folder: {focused(driver)}")
    press(driver, Keys.ENTER)
    wait(driver, name_dialog_open, "the dialog again")
    press(driver, Keys.ENTER)
    check(name_dialog_open(driver) and css(driver, "#name-error")[0].text == "Enter a name."
          and css(driver, "#name-input")[0].get_attribute("aria-invalid") == "true", "an empty name is refused in the dialog")
    press(driver, "kb-made")
    shot(driver, "new-folder")
    press(driver, Keys.ENTER)
    wait(driver, lambda d: not name_dialog_open(d) and d.execute_script("return location.hash") == "#/b/photos/kb-made/", "the new folder opened")
    wait(driver, lambda d: focused(d) == ("heading", "photos/kb-made/"), "the focus on the new folder's heading")


def keyboard_delete_cancelled(driver):
    go(driver, "#/b/photos/")
    wait(driver, lambda d: css(d, "#rows tr[data-key='photos/del-a.txt'] input.select"), "photos/ again")
    driver.execute_script("document.querySelector(\"#rows tr[data-key='photos/del-a.txt'] input.select\").focus()")
    press(driver, Keys.SPACE)
    wait(driver, lambda d: d.find_element("id", "delete-selected").is_enabled(), "selected with Space")
    driver.execute_script("document.getElementById('delete-selected').focus()")
    press(driver, Keys.ENTER)
    wait(driver, lambda d: d.execute_script("return document.getElementById('confirm').open"), "confirmation")
    order = [focused(driver)[1]]
    for _ in range(2):
        press(driver, Keys.TAB)
        order.append(focused(driver)[1])
    check(order == ["Cancel", "Delete", "Cancel"], f"the confirmation keeps the focus: {order}")
    press(driver, Keys.ESCAPE)
    wait(driver, lambda d: not d.execute_script("return document.getElementById('confirm').open"), "Escape cancels")
    check(focused(driver) == ("button", "Delete selected (1)"), f"the focus back on the button: {focused(driver)}")
    check(api("HEAD", "/v1/blobs/photos/del-a.txt").status_code == 200, "Escape deleted nothing")


def keyboard(driver):
    keyboard_login(driver)
    walk(driver, FOLDER_STOPS, "folder view")
    keyboard_sort(driver)
    keyboard_new_folder(driver)
    keyboard_delete_cancelled(driver)
    step("keyboard: Tab stops named and ringed; log in, open, sort, new folder and delete dialogs with Tab/Enter/Escape")
