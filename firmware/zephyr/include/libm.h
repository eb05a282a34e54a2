/* What of <math.h> the VM calls and Zephyr's minimal libc does not declare (its math.h has
   sqrt only): the picolibc routines CMakeLists.txt links (FISRIG_MATH_LIB). Forced into
   vm.c's compile, so that the calls are to double functions, not to implicit int ones. */
#ifndef FISRIG_ZEPHYR_LIBM_H
#define FISRIG_ZEPHYR_LIBM_H
double pow(double x, double y);
double fabs(double x);
#endif
