"""Test suite; a package so that test module names in different folders cannot clash."""
