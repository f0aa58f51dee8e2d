# Fake torch whose import never finishes (a hung driver call or a lock).
import time


def _wait_for_driver():
    time.sleep(600)


_wait_for_driver()
