/*
 * The one main() of the Check unit tests (checkmain.c): each test program defines
 * vpTestSuite(), main runs it and exits 0 only when every test passed. CK_VERBOSITY=verbose
 * names every test and its result (the default prints failures only).
 */
#pragma once

#include <check.h>

Suite *vpTestSuite(void);
