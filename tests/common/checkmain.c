#include "checkmain.h"

#include <stdlib.h>

int
main(void)
{
    SRunner *sr;
    int failed;

    /* Check's 4 s default exists to catch hangs; on a 2-CPU CI machine running tests in
     * parallel a correct case writing files can take longer. Read by tcase_create(). */
    setenv("CK_DEFAULT_TIMEOUT", "60", 0);
    sr = srunner_create(vpTestSuite());
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
