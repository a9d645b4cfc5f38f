package calibrate

// params are the figures the tests of this package read the calibration's
// thresholds from: the ones it runs with by default.
var params = DefaultParams()
