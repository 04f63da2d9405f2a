#!/usr/bin/env python3
"""S3 behaviour of a real Silo cluster (1 proxy + 3 targets), checked against what AWS S3
documents: status codes, error codes, headers and bodies, with boto3 for the ordinary
calls and hand-signed requests where a stock client cannot produce the case (signed
aws-chunked bodies, skewed clocks, virtual-host addressing, tampered signatures).

One cluster serves every module: buckets.py, objects.py, auth_and_input.py, access.py (shared helpers in
harness.py).

Run: python3 test/s3/s3_conformance_test.py  (SILO_BIN_DIR points at the silod to use)
"""
import argparse
import sys
import unittest

import harness
import buckets
import objects
import auth_and_input
import access


def tests_of(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from tests_of(test)
        else:
            yield test


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", action="append", default=[], metavar="PATTERN",
                        help="run only tests whose id contains PATTERN (repeatable)")
    args = parser.parse_args()
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for module in (buckets, objects, auth_and_input, access):
        for test in tests_of(loader.loadTestsFromModule(module)):
            if not args.k or any(pattern in test.id() for pattern in args.k):
                suite.addTest(test)
    harness.start_cluster()
    result = None
    try:
        result = unittest.TextTestRunner(verbosity=2).run(suite)
    finally:
        harness.stop_cluster(failed=result is None or not result.wasSuccessful())
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
