import os

import pytest

DATA = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data"))


def data(*parts):
    return os.path.join(DATA, *parts)


@pytest.fixture
def kineto():
    return lambda name: data("kineto", name)
