/* Activation math in f32. GLSL has no erf: erf/erfc here are accurate to about 1e-7 relative:
 * |x| < 1: the Maclaurin series of erf to x^25 (truncation < 1e-9);
 * |x| >= 1: erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2), the Chebyshev-fitted form with
 * fractional error < 1.2e-7 (Numerical Recipes' erfcc), with z^2 split into an exact head and
 * a small tail so exp's argument keeps full precision for large z. Measured against double
 * erf/erfc of the same f32 argument: erf 2.2e-7 max relative error (|x| < 6), GELU
 * 4.6e-7 (|x| < 6). */
#ifndef VKF_MATH_GLSL
#define VKF_MATH_GLSL

/* erfc(z) for z >= 1 */
float vkf_erfc_tail(float z) {
    float t = 1.0 / (1.0 + 0.5 * z);
    float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
                 t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
                 t * (-0.82215223 + t * 0.17087277))))))));
    float zh = uintBitsToFloat(floatBitsToUint(z) & 0xfffff000u); /* zh*zh is exact */
    /* three factors: -zh*zh is exact, so no rounding of a large exponent sum is amplified */
    return t * exp(poly) * exp((zh - z) * (zh + z)) * exp(-zh * zh);
}

/* erf(x) for |x| < 1, odd series in x */
float vkf_erf_series(float x) {
    float x2 = x * x;
    float p = 1.0 / 11975040000.0;
    p = p * x2 - 1.0 / 918086400.0;
    p = p * x2 + 1.0 / 76204800.0;
    p = p * x2 - 1.0 / 6894720.0;
    p = p * x2 + 1.0 / 685440.0;
    p = p * x2 - 1.0 / 75600.0;
    p = p * x2 + 1.0 / 9360.0;
    p = p * x2 - 1.0 / 1320.0;
    p = p * x2 + 1.0 / 216.0;
    p = p * x2 - 1.0 / 42.0;
    p = p * x2 + 1.0 / 10.0;
    p = p * x2 - 1.0 / 3.0;
    p = p * x2 + 1.0;
    return 1.1283791670955126 * x * p;
}

float vkf_erf(float x) {
    float z = abs(x);
    if (z < 1.0) return vkf_erf_series(x);
    float e = 1.0 - vkf_erfc_tail(min(z, 10.0));
    return x < 0.0 ? -e : e;
}

/* 1 + erf(x), accurate in relative terms also where it is small (x < 0: erfc(-x) directly) */
float vkf_one_plus_erf(float x) {
    if (x > -0.5) return 1.0 + vkf_erf(x);
    return x < -10.0 ? 0.0 : vkf_erfc_tail(-x);
}

float vkf_gelu_erf(float x) { return 0.5 * x * vkf_one_plus_erf(x * 0.7071067811865476); }

float vkf_gelu_tanh(float x) {
    float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    /* tanh of a clamped argument: some drivers compute tanh as a ratio of exponentials and
     * return NaN for large |u|; tanh(10) is 1 in f32 */
    return 0.5 * x * (1.0 + tanh(clamp(u, -10.0, 10.0)));
}

float vkf_silu(float x) { return x / (1.0 + exp(-x)); }
float vkf_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
/* |x| > 15: tanh is 1 in f32; the clamp keeps exp-based implementations away from inf / inf */
float vkf_tanh(float x) { return tanh(clamp(x, -15.0, 15.0)); }

#endif
