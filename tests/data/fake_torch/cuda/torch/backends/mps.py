def is_built():
    return False


def is_available():
    return False
