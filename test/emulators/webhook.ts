/** The receiver lives in src/emulators beside the other emulators; tests import it from here. */
export * from '../../src/emulators/webhook.js'
