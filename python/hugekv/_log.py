# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The library's messages (fallbacks, bad options, broken invariants) as
Python ``logging`` records of the logger "hugekv".

Importing hugekv installs the bridge through hkv_set_log_fn(): a message
the C library logs becomes a record at ERROR, WARNING, INFO or DEBUG, on
the thread that logged it. With no handler configured, Python's own
last-resort handler prints WARNING and above to stderr, as the library
would. HUGEKV_LOG (quiet|error|warn|info|debug), when set, gives the
logger its level, unless the application set one.
"""
import atexit
import logging
import os
import threading

from . import _lib

logger = logging.getLogger("hugekv")

# hkv_log_fn levels: 0 error, 1 warning, 2 info, 3 debug
_LEVELS = (logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG)
_ENV_LEVELS = {"quiet": logging.CRITICAL + 10, "error": logging.ERROR,
               "warn": logging.WARNING, "warning": logging.WARNING,
               "info": logging.INFO, "debug": logging.DEBUG}
_mu = threading.Lock()
_cb = None          # the ctypes callback the library points at, while set


def _deliver(_ctx, level, msg):
    try:
        lv = _LEVELS[level] if 0 <= level < len(_LEVELS) else logging.WARNING
        if logger.isEnabledFor(lv):
            logger.log(lv, "%s", msg.decode("utf-8", "replace") if msg else "")
    except BaseException:       # noqa: B036 - never unwind into C
        pass


def bridge(enable: bool = True) -> None:
    """Route the library's messages to the "hugekv" logger (True, the
    default at import), or back to the library's own stderr output
    (False, filtered by HUGEKV_LOG)."""
    global _cb
    with _mu:
        if enable:
            if _cb is None:
                cb = _lib.LOG_FN(_deliver)
                _lib.lib.hkv_set_log_fn(cb, None)
                _cb = cb
        elif _cb is not None:
            # returns once no other thread is inside the old callback
            _lib.lib.hkv_set_log_fn(_lib.LOG_FN(), None)
            _cb = None


def bridged() -> bool:
    """True while the library's messages go to the "hugekv" logger."""
    return _cb is not None


def _env_level():
    v = os.environ.get("HUGEKV_LOG", "").strip().lower()
    if v in _ENV_LEVELS and logger.level == logging.NOTSET:
        logger.setLevel(_ENV_LEVELS[v])


_env_level()
bridge(True)
# the interpreter's teardown must not leave the library a dead callback
atexit.register(bridge, False)
