/* hpdl_test_types.h - the four element types of the CPU kernel tests, for
   tests that write one check per type with FOR_EACH_TYPE(X): X(suffix,
   storage type, sum type). TO_<s>(v) and FROM_<s>(x) convert from and to
   double; TOL_<s> is the relative tolerance of DESIGN.md for that type. */
#ifndef HPDL_TEST_TYPES_H
#define HPDL_TEST_TYPES_H

#define TO_f32(v) ((float)(v))
#define TO_f64(v) ((double)(v))
#define TO_f16(v) hpdl_f16_from_f32((float)(v))
#define TO_bf16(v) hpdl_bf16_from_f32((float)(v))
#define FROM_f32(x) ((double)(x))
#define FROM_f64(x) ((double)(x))
#define FROM_f16(x) ((double)hpdl_f16_to_f32(x))
#define FROM_bf16(x) ((double)hpdl_bf16_to_f32(x))
#define TOL_f32 1e-5
#define TOL_f64 1e-12
#define TOL_f16 1e-2
#define TOL_bf16 1e-2

#define FOR_EACH_TYPE(X) X(f32, float, float) X(f64, double, double) X(f16, hpdl_f16, float) X(bf16, hpdl_bf16, float)

#endif
