/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_info->nic: device, bus and link attributes of a port. libfabric
 * duplicates and frees these through the fid's control(FI_DUP) and close,
 * and prints them through tostr, so all three live here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrfab.h"
#include "gdrfab_info.h"
#include "gdrfab_obj_common.h"
#include "gdrfab_objs.h"

static int nic_close(struct fid *fid);
static int nic_control(struct fid *fid, int command, void *arg);
static int nic_tostr(const struct fid *fid, char *buf, size_t len);

static struct fi_ops nic_ops = {
	.size = sizeof(struct fi_ops),
	.close = nic_close,
	.bind = gdrfab_nosys_bind,
	.control = nic_control,
	.ops_open = gdrfab_nosys_ops_open,
	.tostr = nic_tostr,
	.ops_set = gdrfab_nosys_ops_set,
};

static void free_nic(struct fid_nic *nic)
{
	if (!nic)
		return;
	if (nic->device_attr) {
		free(nic->device_attr->name);
		free(nic->device_attr->device_id);
		free(nic->device_attr->device_version);
		free(nic->device_attr->vendor_id);
		free(nic->device_attr->driver);
		free(nic->device_attr->firmware);
		free(nic->device_attr);
	}
	free(nic->bus_attr);
	if (nic->link_attr) {
		free(nic->link_attr->address);
		free(nic->link_attr->network_type);
		free(nic->link_attr);
	}
	free(nic);
}

static int nic_close(struct fid *fid)
{
	free_nic(gdrfab_container_of(fid, struct fid_nic, fid));
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Allocates an empty nic with all three attribute blocks. */
static struct fid_nic *alloc_nic(void)
{
	struct fid_nic *nic = calloc(1, sizeof(*nic));

	if (!nic)
		return NULL;
	nic->fid.fclass = FI_CLASS_NIC;
	nic->fid.ops = &nic_ops;
	nic->device_attr = calloc(1, sizeof(*nic->device_attr));
	nic->bus_attr = calloc(1, sizeof(*nic->bus_attr));
	nic->link_attr = calloc(1, sizeof(*nic->link_attr));
	if (!nic->device_attr || !nic->bus_attr || !nic->link_attr) {
		free_nic(nic);
		return NULL;
	}
	return nic;
}

static struct fid_nic *dup_nic(const struct fid_nic *src)
{
	struct fid_nic *nic = alloc_nic();
	const struct fi_device_attr *d = src->device_attr;
	const struct fi_link_attr *l = src->link_attr;

	if (!nic)
		return NULL;
	if (d) {
		nic->device_attr->name = dup_or_null(d->name);
		nic->device_attr->device_id = dup_or_null(d->device_id);
		nic->device_attr->device_version =
			dup_or_null(d->device_version);
		nic->device_attr->vendor_id = dup_or_null(d->vendor_id);
		nic->device_attr->driver = dup_or_null(d->driver);
		nic->device_attr->firmware = dup_or_null(d->firmware);
	}
	if (src->bus_attr)
		*nic->bus_attr = *src->bus_attr;
	if (l) {
		*nic->link_attr = *l;
		nic->link_attr->address = dup_or_null(l->address);
		nic->link_attr->network_type = dup_or_null(l->network_type);
	}
	return nic;
}

static int nic_control(struct fid *fid, int command, void *arg)
{
	struct fid_nic **dup = arg;

	if (command != FI_DUP)
		return -FI_ENOSYS;
	if (!arg)
		return -FI_EINVAL;
	*dup = dup_nic(gdrfab_container_of(fid, struct fid_nic, fid));
	return *dup ? 0 : -FI_ENOMEM;
}

static void appendf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void appendf(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static const char *str_or_none(const char *s)
{
	return s ? s : "(none)";
}

/* The layout libfabric's fi_tostr uses for NICs, so fi_info -v reads the
 * same for every provider. */
static int nic_tostr(const struct fid *fid, char *buf, size_t len)
{
	const struct fid_nic *nic =
		gdrfab_container_of(fid, const struct fid_nic, fid);
	const struct fi_device_attr *d = nic->device_attr;
	const struct fi_bus_attr *b = nic->bus_attr;
	const struct fi_link_attr *l = nic->link_attr;

	appendf(buf, len, "    nic:\n");
	if (d)
		appendf(buf, len,
			"        fi_device_attr:\n"
			"            name: %s\n"
			"            device_id: %s\n"
			"            device_version: %s\n"
			"            vendor_id: %s\n"
			"            driver: %s\n"
			"            firmware: %s\n",
			str_or_none(d->name), str_or_none(d->device_id),
			str_or_none(d->device_version),
			str_or_none(d->vendor_id), str_or_none(d->driver),
			str_or_none(d->firmware));
	if (b) {
		appendf(buf, len,
			"        fi_bus_attr:\n"
			"            bus_type: %s\n",
			b->bus_type == FI_BUS_PCI ? "FI_BUS_PCI"
						  : "FI_BUS_UNKNOWN");
		if (b->bus_type == FI_BUS_PCI)
			appendf(buf, len,
				"            fi_pci_attr:\n"
				"                domain_id: %u\n"
				"                bus_id: %u\n"
				"                device_id: %u\n"
				"                function_id: %u\n",
				b->attr.pci.domain_id, b->attr.pci.bus_id,
				b->attr.pci.device_id, b->attr.pci.function_id);
	}
	if (l)
		appendf(buf, len,
			"        fi_link_attr:\n"
			"            address: %s\n"
			"            mtu: %zu\n"
			"            speed: %zu\n"
			"            state: %s\n"
			"            network_type: %s\n",
			str_or_none(l->address), l->mtu, l->speed,
			l->state == FI_LINK_UP	   ? "FI_LINK_UP"
			: l->state == FI_LINK_DOWN ? "FI_LINK_DOWN"
						   : "FI_LINK_UNKNOWN",
			str_or_none(l->network_type));
	return 0;
}

static char *hex_string(uint32_t value)
{
	char text[16];

	snprintf(text, sizeof(text), "0x%04x", value);
	return strdup(text);
}

struct fid_nic *gdrfab_nic_create(const struct gdrfab_port_desc *port)
{
	struct fid_nic *nic = alloc_nic();
	struct fi_device_attr *d;

	if (!nic)
		return NULL;
	d = nic->device_attr;
	d->name = strdup(port->dev_name);
	d->device_id = hex_string(port->vendor_part_id);
	d->device_version = hex_string(port->hw_ver);
	d->vendor_id = hex_string(port->vendor_id);
	d->driver = strdup(port->driver);
	d->firmware = strdup(port->fw_ver);
	/* Devices without a PCI function (rxe, siw) keep FI_BUS_UNKNOWN. */
	nic->bus_attr->bus_type = FI_BUS_UNKNOWN;
	if (port->pci.valid) {
		nic->bus_attr->bus_type = FI_BUS_PCI;
		nic->bus_attr->attr.pci.domain_id = port->pci.domain;
		nic->bus_attr->attr.pci.bus_id = port->pci.bus;
		nic->bus_attr->attr.pci.device_id = port->pci.device;
		nic->bus_attr->attr.pci.function_id = port->pci.function;
	}
	nic->link_attr->address = strdup(port->link_address);
	nic->link_attr->mtu = port->active_mtu;
	nic->link_attr->speed = port->speed;
	nic->link_attr->state = port->active ? FI_LINK_UP : FI_LINK_DOWN;
	nic->link_attr->network_type = strdup(
		port->link_layer == GDRFAB_LINK_IB ? "InfiniBand" : "Ethernet");
	if (!d->name || !d->device_id || !d->device_version || !d->vendor_id ||
	    !d->driver || !d->firmware || !nic->link_attr->address ||
	    !nic->link_attr->network_type) {
		free_nic(nic);
		return NULL;
	}
	return nic;
}
