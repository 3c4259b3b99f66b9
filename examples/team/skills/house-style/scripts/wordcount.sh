#!/bin/sh
# Prints the number of words read from standard input.
wc -w | tr -d ' '
