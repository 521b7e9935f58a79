"""Headless Chromium driven by Selenium, for the inspector's browser tests and its screenshots
(``docs/screenshots.py``). Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs
them); elsewhere ``ORMOCK_CHROMIUM`` and ``ORMOCK_CHROMEDRIVER`` name the two executables."""

from __future__ import annotations

import os
import shutil
from typing import Any

__all__ = ["browser_missing", "chromium"]

_BROWSERS = ("chromium", "chromium-browser", "google-chrome")
_DRIVERS = ("chromedriver",)


def _find(variable: str, names: tuple[str, ...]) -> str | None:
    named = os.environ.get(variable)
    if named:
        return named if os.access(named, os.X_OK) else None
    for name in names:
        found = shutil.which(name) or (f"/usr/bin/{name}" if os.access(f"/usr/bin/{name}",
                                                                      os.X_OK) else None)
        if found:
            return found
    return None


def browser_missing() -> str | None:
    """Why no browser can be driven here (None: one can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if _find("ORMOCK_CHROMIUM", _BROWSERS) is None:
        return ("no Chromium found (apt-get install chromium chromium-driver, or set "
                "ORMOCK_CHROMIUM)")
    if _find("ORMOCK_CHROMEDRIVER", _DRIVERS) is None:
        return ("no chromedriver found (apt-get install chromium-driver, or set "
                "ORMOCK_CHROMEDRIVER)")
    return None


def chromium(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium whose console log can be read (``get_log("browser")``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _find("ORMOCK_CHROMIUM", _BROWSERS) or ""
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", f"--window-size={width},{height}",
                     "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(_find("ORMOCK_CHROMEDRIVER", _DRIVERS) or "")
    return webdriver.Chrome(service=service, options=options)
