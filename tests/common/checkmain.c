#include "checkmain.h"

#include <stdlib.h>

int
main(void)
{
    SRunner *sr = srunner_create(vpTestSuite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
