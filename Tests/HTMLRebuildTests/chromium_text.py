#!/usr/bin/env python3
"""Reads HTML files as headless Chromium shows them: for each path given,
one line of JSON with document.body.innerText (scripts off, as a mail reader
has them), or null when the page has no body."""
import json
import pathlib
import sys

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

options = Options()
options.binary_location = "/usr/bin/chromium"
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
    options.add_argument(flag)
# Mail readers run no scripts: neither does this reader.
options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    for path in sys.argv[1:]:
        driver.get(pathlib.Path(path).resolve().as_uri())
        text = driver.execute_script("return document.body ? document.body.innerText : null")
        print(json.dumps(text))
finally:
    driver.quit()
