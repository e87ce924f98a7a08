python -m pytest examples/python                          # one emulator, a tenant per test
python -m pytest -n 4 --mediagen-shared examples/python   # four workers share one emulator
