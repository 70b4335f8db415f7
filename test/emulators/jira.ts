/** The emulator lives in src/emulators beside the others; tests import it from here. */
export * from '../../src/emulators/jira.js'
