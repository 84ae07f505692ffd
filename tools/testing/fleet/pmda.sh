# shellcheck shell=bash
# fleet-guest: pmdarefcnt's tests under a real pmcd (sourced).

pmda_installed() { false; }
pmda_tests() { skip "pmdarefcnt" "no tests yet"; }
pmda_says_gone() { false; }
pmda_values_equal() { false; }
pmda_bad_input() { :; }
pmda_remove() { :; }
