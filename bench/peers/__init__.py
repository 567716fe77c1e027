"""Peers built only to be measured: fetched and built by the scripts beside this file."""
