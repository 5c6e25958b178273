# SPDX-License-Identifier: Apache-2.0
encode --output /dev/null && test -c /dev/null
