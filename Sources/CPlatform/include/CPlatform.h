#ifndef CPLATFORM_H
#define CPLATFORM_H

/* What the operating system offers that Swift's Glibc module does not
 * declare. Only the Platform target imports this; nothing here has logic of
 * its own. */

/* A NETLINK_ROUTE socket joined to the link, address and route groups
 * (struct sockaddr_nl and the RTMGRP_* groups are not in Swift's Glibc
 * module); -1 on failure. Close-on-exec and non-blocking. */
int mailsec_netlink_route_socket(void);

#endif
