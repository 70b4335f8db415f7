/** The demo's HTTP service is the tests' too: one implementation, exercised by both. */
export * from '../../src/core/demo/http-service.js'
